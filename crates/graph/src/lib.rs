//! The vector-processing graph: [`Node`]s that take a vector of buffer handles and write one [`Next`]
//! per packet, and the [`Graph`] that moves packets to the next nodes' pending vectors, counts, traces
//! and frees dropped packets.
//!
//! A node declares, through [`NodeInfo`], its name (kebab-case, as users see it), the names of the
//! nodes its edges lead to (edge `i` of the node is `next_nodes[i]`) and its drop reasons (what
//! `show errors` prints). Its `process` function returns nothing per packet: it sets an edge, and
//! `Next::drop(reason)` is just another edge. Nodes that hand packets to a port (or otherwise keep
//! them) answer [`Next::CONSUMED`].
//!
//! The graph is generic over the worker's state `S` (tables, ports), which every node gets through
//! [`Cx`]; nodes themselves hold only their configuration and scratch space. One worker owns one graph
//! and one state: no locks on the fast path.
//!
//! Counters per node (calls, vectors, packets, time → clocks/packet, vectors/call) and per drop reason
//! are kept here; `show runtime` and `show errors` read them through [`Graph::runtime`] and
//! [`Graph::errors`]. A packet trace ([`Graph::trace_add`]) records every node the next N packets
//! visit, with each node's own description of the packet.
#![forbid(unsafe_code)]

use std::time::Instant;

use serde::Serialize;
use vecswitch_buffer::{flags, Pool, FRAME_SIZE};

/// Index of a node in its graph.
pub type NodeId = u16;

/// What a node decided for one packet: an edge index, a drop reason, or "consumed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next(u16);

const DROP_BIT: u16 = 0x8000;

impl Next {
    /// The node kept the packet (sent it, stored it or freed it itself).
    pub const CONSUMED: Next = Next(0x7fff);
    /// Edge `i` of the node (index into its `next_nodes`).
    #[inline]
    pub const fn edge(i: u16) -> Next {
        Next(i)
    }
    /// Drop with reason `r` (index into the node's `drop_reasons`).
    #[inline]
    pub const fn drop(r: u16) -> Next {
        Next(DROP_BIT | r)
    }
    /// `Some(reason)` if this is a drop.
    #[inline]
    pub const fn drop_reason(self) -> Option<u16> {
        if self.0 & DROP_BIT != 0 {
            Some(self.0 & !DROP_BIT)
        } else {
            None
        }
    }
    /// `Some(edge)` if this is an edge.
    #[inline]
    pub const fn edge_index(self) -> Option<u16> {
        if self.0 & DROP_BIT == 0 && self.0 != Self::CONSUMED.0 {
            Some(self.0)
        } else {
            None
        }
    }
}

/// A node's static description.
#[derive(Debug, Clone, Copy)]
pub struct NodeInfo {
    /// Kebab-case name, as `show runtime` prints it.
    pub name: &'static str,
    /// Names of the nodes the node's edges lead to; edge `i` is `next_nodes[i]`.
    pub next_nodes: &'static [&'static str],
    /// Drop reasons; reason `r` is `drop_reasons[r]`, as `show errors` prints it.
    pub drop_reasons: &'static [&'static str],
}

/// What a node's `process` works with.
#[derive(Debug)]
pub struct Cx<'a, S> {
    pub pool: &'a mut Pool,
    pub state: &'a mut S,
    /// Monotonic time of this dispatch, in nanoseconds.
    pub now_ns: u64,
}

/// A graph node.
pub trait Node<S>: Send {
    /// Name, edges and drop reasons.
    fn info(&self) -> NodeInfo;
    /// Decides one [`Next`] per packet: `nexts[i]` for `pkts[i]`. `pkts.len() <= FRAME_SIZE` and
    /// `nexts.len() == pkts.len()`. Packets given [`Next::CONSUMED`] belong to the node from then on.
    fn process(&mut self, cx: &mut Cx<'_, S>, pkts: &[u32], nexts: &mut [Next]);
    /// A one-line description of a traced packet after this node processed it.
    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let _ = (pool, pkt);
        String::new()
    }
}

/// Errors found while building a graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A node names a next node that is not registered.
    #[error("node `{node}` has an edge to `{next}`, which is not registered")]
    UnknownNext {
        node: &'static str,
        next: &'static str,
    },
    /// Two nodes share a name.
    #[error("two nodes are named `{0}`")]
    DuplicateName(&'static str),
}

/// Per-node counters, as `show runtime` prints them.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct NodeRuntime {
    pub name: String,
    pub calls: u64,
    pub vectors: u64,
    pub packets: u64,
    pub drops: u64,
    /// Total time spent in `process`, nanoseconds.
    pub time_ns: u64,
    /// `time_ns` converted with the clock rate, per packet.
    pub clocks_per_packet: f64,
    /// Average vector size: packets per call, as VPP's `show runtime` "Vectors/Call" (VPP counts
    /// vector elements, i.e. packets, as "vectors").
    pub vectors_per_call: f64,
    pub packets_per_vector: f64,
}

/// One drop-reason counter, as `show errors` prints it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ErrorCount {
    pub node: String,
    pub reason: String,
    pub count: u64,
}

/// One step of a traced packet.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TraceStep {
    /// Trace number of the packet (1-based, in order of arrival).
    pub packet: u32,
    pub node: String,
    /// Where the packet went: a node name, `drop: REASON`, or `consumed`.
    pub next: String,
    /// The node's own description.
    pub detail: String,
}

struct Slot<S> {
    node: Box<dyn Node<S>>,
    info: NodeInfo,
    /// Edge index → node id (resolved by `finalize`).
    edges: Vec<NodeId>,
    pending: Vec<u32>,
    calls: u64,
    packets: u64,
    time_ns: u64,
    drops: Vec<u64>,
}

/// A graph of nodes with its pending vectors, counters and trace.
pub struct Graph<S> {
    slots: Vec<Slot<S>>,
    scratch: Vec<u32>,
    nexts: Vec<Next>,
    clock_hz: f64,
    trace_budget: u32,
    trace_count: u32,
    trace: Vec<TraceStep>,
    trace_limit: usize,
    epoch: Instant,
}

impl<S> std::fmt::Debug for Graph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.slots.len())
            .finish()
    }
}

impl<S> Default for Graph<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Graph<S> {
    pub fn new() -> Graph<S> {
        Graph {
            slots: Vec::new(),
            scratch: Vec::with_capacity(FRAME_SIZE * 4),
            nexts: vec![Next::CONSUMED; FRAME_SIZE],
            clock_hz: cpu_hz(),
            trace_budget: 0,
            trace_count: 0,
            trace: Vec::new(),
            trace_limit: 10_000,
            epoch: Instant::now(),
        }
    }

    /// Registers a node; edges are resolved by [`Graph::finalize`].
    pub fn add(&mut self, node: Box<dyn Node<S>>) -> NodeId {
        let info = node.info();
        self.slots.push(Slot {
            node,
            info,
            edges: Vec::new(),
            pending: Vec::with_capacity(FRAME_SIZE * 2),
            calls: 0,
            packets: 0,
            time_ns: 0,
            drops: vec![0; info.drop_reasons.len()],
        });
        (self.slots.len() - 1) as NodeId
    }

    /// Resolves every node's next-node names to node ids.
    pub fn finalize(&mut self) -> Result<(), GraphError> {
        for (i, s) in self.slots.iter().enumerate() {
            if self.slots[..i].iter().any(|o| o.info.name == s.info.name) {
                return Err(GraphError::DuplicateName(s.info.name));
            }
        }
        let mut all = Vec::new();
        for s in &self.slots {
            let mut edges = Vec::new();
            for &next in s.info.next_nodes {
                match self.slots.iter().position(|o| o.info.name == next) {
                    Some(id) => edges.push(id as NodeId),
                    None => {
                        return Err(GraphError::UnknownNext {
                            node: s.info.name,
                            next,
                        })
                    }
                }
            }
            all.push(edges);
        }
        for (s, e) in self.slots.iter_mut().zip(all) {
            s.edges = e;
        }
        Ok(())
    }

    /// The id of the node called `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.slots
            .iter()
            .position(|s| s.info.name == name)
            .map(|i| i as NodeId)
    }

    /// Names of all nodes, in registration order.
    pub fn node_names(&self) -> Vec<&'static str> {
        self.slots.iter().map(|s| s.info.name).collect()
    }

    /// Nanoseconds since the graph was created (the clock every dispatch uses).
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Queues packets for `node`; they are processed by the next [`Graph::dispatch`]. Packets are
    /// marked for tracing here while a trace is armed.
    pub fn enqueue(&mut self, pool: &mut Pool, node: NodeId, pkts: &[u32]) {
        if self.trace_budget > 0 {
            for &h in pkts {
                if self.trace_budget == 0 {
                    break;
                }
                self.trace_budget -= 1;
                self.trace_count += 1;
                let hdr = pool.header_mut(h);
                hdr.flags |= flags::TRACED;
                hdr.trace_id = self.trace_count;
            }
        }
        self.slots[node as usize].pending.extend_from_slice(pkts);
    }

    /// Runs every node with pending packets, in registration order, until no packets are pending.
    /// Returns the number of node calls made.
    pub fn dispatch(&mut self, pool: &mut Pool, state: &mut S) -> usize {
        let now_ns = self.now_ns();
        let mut calls = 0;
        loop {
            let mut ran = false;
            for i in 0..self.slots.len() {
                if self.slots[i].pending.is_empty() {
                    continue;
                }
                ran = true;
                // Take the pending vector so that packets this node sends to itself wait for the
                // next round instead of looping within this call.
                std::mem::swap(&mut self.scratch, &mut self.slots[i].pending);
                let mut work = std::mem::take(&mut self.scratch);
                for chunk in work.chunks(FRAME_SIZE) {
                    self.run_node(i, chunk, pool, state, now_ns);
                    calls += 1;
                }
                work.clear();
                self.scratch = work;
            }
            if !ran {
                return calls;
            }
        }
    }

    fn run_node(&mut self, i: usize, pkts: &[u32], pool: &mut Pool, state: &mut S, now_ns: u64) {
        let n = pkts.len();
        let mut nexts = std::mem::take(&mut self.nexts);
        nexts[..n].fill(Next::CONSUMED);
        let t0 = Instant::now();
        {
            let slot = &mut self.slots[i];
            let mut cx = Cx {
                pool: &mut *pool,
                state: &mut *state,
                now_ns,
            };
            slot.node.process(&mut cx, pkts, &mut nexts[..n]);
            slot.calls += 1;
            slot.packets += n as u64;
            slot.time_ns += t0.elapsed().as_nanos() as u64;
        }
        let tracing = self.trace_count > 0;
        for (k, &h) in pkts.iter().enumerate() {
            let next = nexts[k];
            if tracing && pool.header(h).flags & flags::TRACED != 0 {
                self.record_trace(i, pool, h, next);
            }
            if let Some(e) = next.edge_index() {
                let target = self.slots[i].edges.get(e as usize).copied();
                match target {
                    Some(t) => self.slots[t as usize].pending.push(h),
                    None => {
                        // A node answered an edge it does not have: a bug, counted as a drop.
                        debug_assert!(false, "node {} used edge {e}", self.slots[i].info.name);
                        pool.free(h);
                    }
                }
            } else if let Some(r) = next.drop_reason() {
                if let Some(c) = self.slots[i].drops.get_mut(r as usize) {
                    *c += 1;
                }
                pool.free(h);
            }
        }
        self.nexts = nexts;
    }

    fn record_trace(&mut self, i: usize, pool: &Pool, h: u32, next: Next) {
        if self.trace.len() >= self.trace_limit {
            return;
        }
        let slot = &self.slots[i];
        let next_name = if let Some(e) = next.edge_index() {
            slot.info
                .next_nodes
                .get(e as usize)
                .copied()
                .unwrap_or("?")
                .to_string()
        } else if let Some(r) = next.drop_reason() {
            format!(
                "drop: {}",
                slot.info
                    .drop_reasons
                    .get(r as usize)
                    .copied()
                    .unwrap_or("?")
            )
        } else {
            "consumed".to_string()
        };
        self.trace.push(TraceStep {
            packet: pool.header(h).trace_id,
            node: slot.info.name.to_string(),
            next: next_name,
            detail: slot.node.trace(pool, h),
        });
    }

    /// Arms the trace for the next `n` packets enqueued from input (adds to what is armed).
    pub fn trace_add(&mut self, n: u32) {
        self.trace_budget = self.trace_budget.saturating_add(n);
    }

    /// The trace steps recorded so far, in order.
    pub fn trace(&self) -> &[TraceStep] {
        &self.trace
    }

    /// Forgets recorded trace steps and disarms the trace.
    pub fn trace_clear(&mut self) {
        self.trace.clear();
        self.trace_budget = 0;
        self.trace_count = 0;
    }

    /// Counters per node, as `show runtime` prints them (nodes never called included).
    pub fn runtime(&self) -> Vec<NodeRuntime> {
        let per_ns = self.clock_hz / 1e9;
        self.slots
            .iter()
            .map(|s| {
                let pk = s.packets.max(1) as f64;
                let calls = s.calls.max(1) as f64;
                NodeRuntime {
                    name: s.info.name.to_string(),
                    calls: s.calls,
                    vectors: s.calls,
                    packets: s.packets,
                    drops: s.drops.iter().sum(),
                    time_ns: s.time_ns,
                    clocks_per_packet: if s.packets == 0 {
                        0.0
                    } else {
                        s.time_ns as f64 * per_ns / pk
                    },
                    vectors_per_call: if s.calls == 0 {
                        0.0
                    } else {
                        s.packets as f64 / calls
                    },
                    packets_per_vector: if s.calls == 0 {
                        0.0
                    } else {
                        s.packets as f64 / calls
                    },
                }
            })
            .collect()
    }

    /// Non-zero drop counters, as `show errors` prints them.
    pub fn errors(&self) -> Vec<ErrorCount> {
        let mut out = Vec::new();
        for s in &self.slots {
            for (r, &c) in s.drops.iter().enumerate() {
                if c > 0 {
                    out.push(ErrorCount {
                        node: s.info.name.to_string(),
                        reason: s.info.drop_reasons[r].to_string(),
                        count: c,
                    });
                }
            }
        }
        out
    }

    /// Adds to a node's drop counter from outside `process` (for input paths that drop before
    /// a packet ever enters the graph, e.g. a port's receive errors).
    pub fn count_drop(&mut self, node: NodeId, reason: u16, n: u64) {
        if let Some(c) = self
            .slots
            .get_mut(node as usize)
            .and_then(|s| s.drops.get_mut(reason as usize))
        {
            *c += n;
        }
    }

    /// Zeroes every node and drop counter.
    pub fn clear_counters(&mut self) {
        for s in &mut self.slots {
            s.calls = 0;
            s.packets = 0;
            s.time_ns = 0;
            s.drops.iter_mut().for_each(|c| *c = 0);
        }
    }

    /// Clock rate used to turn time into clocks, in Hz.
    pub fn clock_hz(&self) -> f64 {
        self.clock_hz
    }

    /// Sets the clock rate used to turn time into clocks.
    pub fn set_clock_hz(&mut self, hz: f64) {
        self.clock_hz = hz;
    }

    /// Direct access to a node, e.g. to reconfigure it between dispatches.
    pub fn node_mut(&mut self, id: NodeId) -> &mut dyn Node<S> {
        &mut *self.slots[id as usize].node
    }
}

/// The CPU clock rate from `/proc/cpuinfo` (`cpu MHz`), or 1 GHz if it cannot be read. Clocks shown
/// by `show runtime` are time × this rate (the TSC rate on machines with an invariant TSC).
pub fn cpu_hz() -> f64 {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map(|mhz| mhz * 1e6)
        .unwrap_or(1e9)
}

/// Test helpers: run one node on packets and see where each went.
pub mod testing {
    use super::*;

    /// Runs `node` once on `pkts` and returns the decision for each packet. Dropped packets are not
    /// freed (the caller owns every handle it passed in).
    pub fn run_node<S, N: Node<S>>(
        node: &mut N,
        pool: &mut Pool,
        state: &mut S,
        pkts: &[u32],
    ) -> Vec<Next> {
        let mut nexts = vec![Next::CONSUMED; pkts.len()];
        for (p, n) in pkts.chunks(FRAME_SIZE).zip(nexts.chunks_mut(FRAME_SIZE)) {
            let mut cx = Cx {
                pool: &mut *pool,
                state: &mut *state,
                now_ns: 0,
            };
            node.process(&mut cx, p, n);
        }
        nexts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends even-length packets to `sink`, drops odd ones as `odd-length`.
    struct Classify;
    impl Node<Vec<u32>> for Classify {
        fn info(&self) -> NodeInfo {
            NodeInfo {
                name: "classify",
                next_nodes: &["sink"],
                drop_reasons: &["odd-length"],
            }
        }
        fn process(&mut self, cx: &mut Cx<'_, Vec<u32>>, pkts: &[u32], nexts: &mut [Next]) {
            for (p, n) in pkts.iter().zip(nexts.iter_mut()) {
                *n = if cx.pool.data(*p).len() % 2 == 0 {
                    Next::edge(0)
                } else {
                    Next::drop(0)
                };
            }
        }
        fn trace(&self, pool: &Pool, pkt: u32) -> String {
            format!("len {}", pool.data(pkt).len())
        }
    }

    /// Keeps what it gets in the state (consumes).
    struct Sink;
    impl Node<Vec<u32>> for Sink {
        fn info(&self) -> NodeInfo {
            NodeInfo {
                name: "sink",
                next_nodes: &[],
                drop_reasons: &[],
            }
        }
        fn process(&mut self, cx: &mut Cx<'_, Vec<u32>>, pkts: &[u32], _nexts: &mut [Next]) {
            cx.state.extend_from_slice(pkts);
        }
    }

    fn setup() -> (Graph<Vec<u32>>, Pool) {
        let mut g = Graph::new();
        g.add(Box::new(Classify));
        g.add(Box::new(Sink));
        g.finalize().unwrap();
        (g, Pool::new(1024))
    }

    #[test]
    fn every_burst_size_is_forwarded_or_dropped_exactly() {
        for burst in [1usize, 3, 4, 5, 255, 256, 257, 600] {
            let (mut g, mut pool) = setup();
            let mut pkts = Vec::new();
            for i in 0..burst {
                let h = pool.alloc().unwrap();
                pool.write_packet(h, &vec![0u8; 60 + (i % 2)]);
                pkts.push(h);
            }
            let mut kept = Vec::new();
            g.enqueue(&mut pool, 0, &pkts);
            g.dispatch(&mut pool, &mut kept);
            let odd = burst / 2;
            assert_eq!(kept.len(), burst - odd, "burst {burst}");
            assert_eq!(
                pool.in_use() as usize,
                burst - odd,
                "dropped packets are freed"
            );
            let errs = g.errors();
            if odd > 0 {
                assert_eq!(
                    errs,
                    vec![ErrorCount {
                        node: "classify".into(),
                        reason: "odd-length".into(),
                        count: odd as u64
                    }]
                );
            }
            let rt = g.runtime();
            assert_eq!(rt[0].packets, burst as u64);
            assert_eq!(rt[0].calls, burst.div_ceil(FRAME_SIZE) as u64);
            assert_eq!(rt[1].packets, (burst - odd) as u64);
            let avg = burst as f64 / burst.div_ceil(FRAME_SIZE) as f64;
            assert!(
                (rt[0].vectors_per_call - avg).abs() < 1e-9,
                "vectors/call is the mean vector size"
            );
            pool.free_bulk(&kept);
            assert_eq!(pool.in_use(), 0);
        }
    }

    #[test]
    fn unknown_edge_is_a_build_error() {
        let mut g: Graph<Vec<u32>> = Graph::new();
        g.add(Box::new(Classify));
        assert!(matches!(
            g.finalize(),
            Err(GraphError::UnknownNext { next: "sink", .. })
        ));
    }

    #[test]
    fn trace_records_every_node_of_the_next_n_packets() {
        let (mut g, mut pool) = setup();
        g.trace_add(2);
        let mut pkts = Vec::new();
        for len in [60usize, 61, 62] {
            let h = pool.alloc().unwrap();
            pool.write_packet(h, &vec![0u8; len]);
            pkts.push(h);
        }
        let mut kept = Vec::new();
        g.enqueue(&mut pool, 0, &pkts);
        g.dispatch(&mut pool, &mut kept);
        let t = g.trace();
        assert_eq!(t.len(), 3, "{t:?}");
        assert_eq!(
            (t[0].packet, t[0].node.as_str(), t[0].next.as_str()),
            (1, "classify", "sink")
        );
        assert_eq!((t[1].packet, t[1].next.as_str()), (2, "drop: odd-length"));
        assert_eq!(t[0].detail, "len 60");
        assert_eq!(
            (t[2].packet, t[2].node.as_str(), t[2].next.as_str()),
            (1, "sink", "consumed")
        );
        pool.free_bulk(&kept);
        g.clear_counters();
        assert!(g.errors().is_empty());
    }
}
