//! The vector-processing graph: [`Node`]s that take a vector of buffer handles and write one [`Next`]
//! per packet, and the [`Graph`] that moves packets to the next nodes' pending vectors, counts, traces
//! and frees dropped packets.
//!
//! A node declares, through [`NodeInfo`], its name (kebab-case, as users see it), the names of the
//! nodes its edges lead to (edge `i` of the node is `next_nodes[i]`), its drop reasons and its other
//! counters (what `show errors` prints). Edges, drop reasons and counters are declared as enums with
//! [`named_enum!`]. Its `process` function returns nothing per packet: it sets an edge, and
//! `Next::drop(reason)` is just another edge. Nodes that hand packets to a port (or otherwise keep
//! them) answer [`Next::CONSUMED`].
//!
//! The primitives beyond "one decision per packet":
//!
//! - **Emit (1 → N)**: a node may emit packets it made (clones for flooding, VPP's
//!   `vlib_buffer_clone` in `l2_flood.c`) with [`Emit::push`] and a [`Next`] each; the graph enqueues
//!   them like the packets the node was handed — to an edge, an arc or a drop — and traces them.
//! - **Counters per node**: besides drop reasons, a node declares named counters
//!   ([`NodeInfo::counters`]) and adds to them through [`Cx::counters`]; `show errors` lists them.
//! - **Feature arcs**: an arc ([`Graph::add_arc`]) is an ordered list of feature nodes in front of an
//!   end node, enabled per interface (the interface read from the buffer header by the arc's key
//!   function). A node sends a packet "along the arc" with [`Next::arc`]: to the first feature after
//!   the sending node that is enabled on the packet's interface, or to the end node. A feature
//!   inserts itself on an interface's path without editing the nodes before and after it, as VPP's
//!   l2-input/l2-output feature bitmaps (`src/vnet/l2/feat_bitmap.h`, `vnet_l2_feature_next`).
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

use serde::{Deserialize, Serialize};
use vecswitch_buffer::{flags, BufferHeader, Pool, FRAME_SIZE};

/// Index of a node in its graph.
pub type NodeId = u16;
/// Index of a feature arc in its graph.
pub type ArcId = u16;
/// Most features on one arc (one bit each in the per-interface bitmap).
pub const MAX_ARC_FEATURES: usize = 64;

/// What a node decided for one packet: an edge index, a feature arc, a drop reason, or "consumed".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Next(u16);

const DROP_BIT: u16 = 0x8000;
const ARC_BIT: u16 = 0x4000;

impl Next {
    /// The node kept the packet (sent it, stored it or freed it itself).
    pub const CONSUMED: Next = Next(0x3fff);
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
    /// Along feature arc `a`: the next feature enabled on the packet's interface after the sending
    /// node (the first one if the sender is not on the arc), or the arc's end node.
    #[inline]
    pub const fn arc(a: ArcId) -> Next {
        Next(ARC_BIT | a)
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
        if self.0 & (DROP_BIT | ARC_BIT) == 0 && self.0 != Self::CONSUMED.0 {
            Some(self.0)
        } else {
            None
        }
    }
    /// `Some(arc)` if this is "along an arc".
    #[inline]
    pub const fn arc_index(self) -> Option<ArcId> {
        if self.0 & (DROP_BIT | ARC_BIT) == ARC_BIT {
            Some(self.0 & !ARC_BIT)
        } else {
            None
        }
    }
}

/// Declares a `#[repr(u16)]` enum of next edges (`as edge`), drop reasons (`as drop`) or counters
/// (`as counter`) with their user-visible names. `NAMES[i]` is the name of variant `i`; for edges
/// and drops `next()` turns a variant into a [`Next`]; `index()` is the variant's index.
///
/// ```
/// vecswitch_graph::named_enum! {
///     /// Drop reasons of `my-node`.
///     pub enum DropReason as drop { Runt = "runt", NoRoute = "no-route" }
/// }
/// assert_eq!(DropReason::NAMES, &["runt", "no-route"]);
/// assert_eq!(DropReason::NoRoute.next(), vecswitch_graph::Next::drop(1));
/// ```
#[macro_export]
macro_rules! named_enum {
    ($(#[$m:meta])* $vis:vis enum $name:ident as counter {
        $($(#[$vm:meta])* $var:ident = $s:literal),* $(,)?
    }) => {
        $crate::named_enum!(@base $(#[$m])* $vis enum $name { $($(#[$vm])* $var = $s),* });
    };
    ($(#[$m:meta])* $vis:vis enum $name:ident as $ctor:ident {
        $($(#[$vm:meta])* $var:ident = $s:literal),* $(,)?
    }) => {
        $crate::named_enum!(@base $(#[$m])* $vis enum $name { $($(#[$vm])* $var = $s),* });
        impl $name {
            /// The graph decision for this variant.
            #[inline]
            pub const fn next(self) -> $crate::Next {
                $crate::Next::$ctor(self as u16)
            }
        }
    };
    (@base $(#[$m:meta])* $vis:vis enum $name:ident {
        $($(#[$vm:meta])* $var:ident = $s:literal),*
    }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u16)]
        $vis enum $name { $($(#[$vm])* $var),* }
        // Not every enum uses every helper.
        #[allow(dead_code)]
        impl $name {
            /// User-visible names, by variant index.
            pub const NAMES: &'static [&'static str] = &[$($s),*];
            /// The user-visible name.
            pub const fn name(self) -> &'static str {
                Self::NAMES[self as usize]
            }
            /// The variant's index (into `NAMES`).
            #[inline]
            pub const fn index(self) -> u16 {
                self as u16
            }
        }
    };
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
    /// Other counters (events that are not drops of the packet at hand: a station learned, a copy
    /// that could not be made); counter `c` is `counters[c]`, as `show errors` prints it.
    pub counters: &'static [&'static str],
}

/// A node's own counters, as its `process` sees them ([`NodeInfo::counters`]).
#[derive(Debug)]
pub struct Counters<'a>(&'a mut [u64]);

impl Counters<'_> {
    /// Adds `n` to counter `c` (an index into [`NodeInfo::counters`]; others are ignored).
    #[inline]
    pub fn add(&mut self, c: u16, n: u64) {
        if let Some(x) = self.0.get_mut(c as usize) {
            *x += n;
        }
    }
    /// The value of counter `c` (0 for an undeclared one).
    pub fn get(&self, c: u16) -> u64 {
        self.0.get(c as usize).copied().unwrap_or(0)
    }
}

/// Packets a node makes (clones) and sends on, each with its [`Next`].
#[derive(Debug)]
pub struct Emit<'a>(&'a mut Vec<(u32, Next)>);

impl Emit<'_> {
    /// Sends packet `pkt`, which the node made (not one it was handed), to `next`. The graph owns it
    /// from then on: it is enqueued, traced, counted or freed like the packets the node was handed.
    #[inline]
    pub fn push(&mut self, pkt: u32, next: Next) {
        self.0.push((pkt, next));
    }
}

/// What a node's `process` works with.
#[derive(Debug)]
pub struct Cx<'a, S> {
    pub pool: &'a mut Pool,
    pub state: &'a mut S,
    /// Monotonic time of this dispatch, in nanoseconds.
    pub now_ns: u64,
    /// This node's counters.
    pub counters: Counters<'a>,
    /// Packets this node makes, with their next.
    pub emit: Emit<'a>,
}

/// A graph node.
pub trait Node<S>: Send {
    /// Name, edges, drop reasons and counters.
    fn info(&self) -> NodeInfo;
    /// Decides one [`Next`] per packet: `nexts[i]` for `pkts[i]`. `pkts.len() <= FRAME_SIZE` and
    /// `nexts.len() == pkts.len()`. Packets given [`Next::CONSUMED`] belong to the node from then on.
    /// Packets the node makes leave through [`Cx::emit`].
    fn process(&mut self, cx: &mut Cx<'_, S>, pkts: &[u32], nexts: &mut [Next]);
    /// A one-line description of a traced packet after this node processed it.
    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let _ = (pool, pkt);
        String::new()
    }
}

/// Errors found while building a graph or changing its arcs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// An arc names a node (end or feature) that is not registered.
    #[error("arc `{arc}` names node `{node}`, which is not registered")]
    UnknownArcNode {
        arc: &'static str,
        node: &'static str,
    },
    /// No arc with this id or name.
    #[error("no feature arc `{0}`")]
    UnknownArc(String),
    /// The node is not a feature of the arc.
    #[error("`{node}` is not a feature of arc `{arc}`; its features are: {features}")]
    NotAFeature {
        arc: &'static str,
        node: String,
        features: String,
    },
    /// An arc has more features than its bitmap holds.
    #[error("arc `{arc}` has {count} features: accepted at most {MAX_ARC_FEATURES}")]
    TooManyFeatures { arc: &'static str, count: usize },
}

/// Per-node counters, as `show runtime` prints them.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
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

/// One drop-reason (or other node) counter, as `show errors` prints it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorCount {
    pub node: String,
    pub reason: String,
    pub count: u64,
}

/// One step of a traced packet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TraceStep {
    /// Trace number of the packet (1-based, in order of arrival; a clone has its original's).
    pub packet: u32,
    pub node: String,
    /// Where the packet went: a node name, `drop: REASON`, or `consumed`.
    pub next: String,
    /// The node's own description (`clone: …` for a packet the node made).
    pub detail: String,
}

struct Slot<S> {
    node: Box<dyn Node<S>>,
    info: NodeInfo,
    /// Edge index → node id (resolved by `finalize`).
    edges: Vec<NodeId>,
    /// Per arc: the features that may follow this node (bit i = the arc's feature i); all bits for
    /// a node that is not on the arc (resolved by `finalize`).
    arc_after: Vec<u64>,
    pending: Vec<u32>,
    calls: u64,
    packets: u64,
    time_ns: u64,
    drops: Vec<u64>,
    counters: Vec<u64>,
}

/// Which interface of a packet an arc's features are enabled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArcKey {
    /// The receive interface (`BufferHeader::rx_port`): input arcs.
    Rx,
    /// The transmit interface (`BufferHeader::tx_port`): output arcs.
    Tx,
}

impl ArcKey {
    /// The packet's interface for this key.
    #[inline(always)]
    pub fn of(self, hdr: &BufferHeader) -> u16 {
        match self {
            ArcKey::Rx => hdr.rx_port,
            ArcKey::Tx => hdr.tx_port,
        }
    }
}

/// A feature arc: ordered features in front of an end node, enabled per interface.
struct FeatureArc {
    name: &'static str,
    end_name: &'static str,
    end: NodeId,
    /// The interface a packet is on, for this arc.
    key: ArcKey,
    /// `(order, name)` as registered; sorted by order (then registration) at `finalize`.
    declared: Vec<(u16, &'static str)>,
    /// Feature node ids in arc order (bit i of a bitmap = `features[i]`).
    features: Vec<NodeId>,
    /// Enabled features per interface.
    enabled: Vec<u64>,
    /// Interfaces with at least one feature enabled (0: every packet goes straight to `end`).
    active: usize,
}

impl FeatureArc {
    #[inline]
    fn target(&self, after: u64, hdr: &BufferHeader) -> NodeId {
        if self.active == 0 {
            return self.end;
        }
        self.target_of(after, self.key.of(hdr))
    }

    /// The node after a node whose later features are `after`, for a packet on interface `iface`.
    #[inline]
    fn target_of(&self, after: u64, iface: u16) -> NodeId {
        let bits = self.enabled.get(iface as usize).copied().unwrap_or(0) & after;
        if bits == 0 {
            self.end
        } else {
            self.features[bits.trailing_zeros() as usize]
        }
    }
}

/// Where one packet goes after a node.
#[derive(Clone, Copy)]
enum Dest {
    Node(NodeId),
    Drop(u16),
    Consumed,
    /// A node answered an edge or arc it does not have: a bug, freed and counted as a drop.
    Invalid,
}

/// A graph of nodes with its pending vectors, arcs, counters and trace.
pub struct Graph<S> {
    slots: Vec<Slot<S>>,
    arcs: Vec<FeatureArc>,
    scratch: Vec<u32>,
    nexts: Vec<Next>,
    emitted: Vec<(u32, Next)>,
    clock_hz: f64,
    trace_budget: u32,
    trace_count: u32,
    trace: Vec<TraceStep>,
    trace_limit: usize,
    clock: GraphClock,
}

impl<S> std::fmt::Debug for Graph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.slots.len())
            .field("arcs", &self.arcs.len())
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
            arcs: Vec::new(),
            scratch: Vec::with_capacity(FRAME_SIZE * 4),
            nexts: vec![Next::CONSUMED; FRAME_SIZE],
            emitted: Vec::with_capacity(FRAME_SIZE * 4),
            clock_hz: cpu_hz(),
            trace_budget: 0,
            trace_count: 0,
            trace: Vec::new(),
            trace_limit: 10_000,
            clock: GraphClock::new(),
        }
    }

    /// Registers a node; edges are resolved by [`Graph::finalize`].
    pub fn add(&mut self, node: Box<dyn Node<S>>) -> NodeId {
        let info = node.info();
        self.slots.push(Slot {
            node,
            info,
            edges: Vec::new(),
            arc_after: Vec::new(),
            pending: Vec::with_capacity(FRAME_SIZE * 2),
            calls: 0,
            packets: 0,
            time_ns: 0,
            drops: vec![0; info.drop_reasons.len()],
            counters: vec![0; info.counters.len()],
        });
        (self.slots.len() - 1) as NodeId
    }

    /// Declares a feature arc ending at node `end`, on the interface `key` names in a packet's
    /// header. Nodes and features are resolved by [`Graph::finalize`].
    pub fn add_arc(&mut self, name: &'static str, end: &'static str, key: ArcKey) -> ArcId {
        self.arcs.push(FeatureArc {
            name,
            end_name: end,
            end: 0,
            key,
            declared: Vec::new(),
            features: Vec::new(),
            enabled: Vec::new(),
            active: 0,
        });
        (self.arcs.len() - 1) as ArcId
    }

    /// Declares node `node` a feature of `arc` at position `order` (lower runs first; equal orders
    /// run in registration order), disabled on every interface until [`Graph::set_feature`].
    pub fn add_feature(
        &mut self,
        arc: ArcId,
        node: &'static str,
        order: u16,
    ) -> Result<(), GraphError> {
        let a = self
            .arcs
            .get_mut(arc as usize)
            .ok_or_else(|| GraphError::UnknownArc(format!("#{arc}")))?;
        a.declared.push((order, node));
        Ok(())
    }

    /// Resolves every node's next-node names and every arc's nodes to node ids.
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
                match self.node_id(next) {
                    Some(id) => edges.push(id),
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
        let mut arcs = Vec::new();
        for a in &self.arcs {
            let end = self.node_id(a.end_name).ok_or(GraphError::UnknownArcNode {
                arc: a.name,
                node: a.end_name,
            })?;
            if a.declared.len() > MAX_ARC_FEATURES {
                return Err(GraphError::TooManyFeatures {
                    arc: a.name,
                    count: a.declared.len(),
                });
            }
            let mut declared = a.declared.clone();
            declared.sort_by_key(|&(order, _)| order); // stable: ties keep registration order
            let mut features = Vec::new();
            for &(_, name) in &declared {
                features.push(self.node_id(name).ok_or(GraphError::UnknownArcNode {
                    arc: a.name,
                    node: name,
                })?);
            }
            arcs.push((end, declared, features));
        }
        for (s, e) in self.slots.iter_mut().zip(all) {
            s.edges = e;
            s.arc_after = vec![u64::MAX; self.arcs.len()];
        }
        for (ai, (a, (end, declared, features))) in self.arcs.iter_mut().zip(arcs).enumerate() {
            for (pos, &id) in features.iter().enumerate() {
                // Features after position `pos`: bits pos+1.. (none after the 64th).
                let after = if pos + 1 >= 64 {
                    0
                } else {
                    u64::MAX << (pos + 1)
                };
                self.slots[id as usize].arc_after[ai] = after;
            }
            a.end = end;
            a.declared = declared;
            a.features = features;
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

    /// The id of the arc called `name`.
    pub fn arc_id(&self, name: &str) -> Option<ArcId> {
        self.arcs
            .iter()
            .position(|a| a.name == name)
            .map(|i| i as ArcId)
    }

    /// Names of an arc's features in arc order (after [`Graph::finalize`]).
    pub fn arc_features(&self, arc: ArcId) -> Vec<&'static str> {
        self.arcs
            .get(arc as usize)
            .map_or_else(Vec::new, |a| a.declared.iter().map(|&(_, n)| n).collect())
    }

    /// Enables (or disables) feature `feature` of `arc` on interface `iface`.
    pub fn set_feature(
        &mut self,
        arc: ArcId,
        iface: u16,
        feature: &str,
        on: bool,
    ) -> Result<(), GraphError> {
        let a = self
            .arcs
            .get_mut(arc as usize)
            .ok_or_else(|| GraphError::UnknownArc(format!("#{arc}")))?;
        let Some(bit) = a.declared.iter().position(|&(_, n)| n == feature) else {
            return Err(GraphError::NotAFeature {
                arc: a.name,
                node: feature.to_string(),
                features: a
                    .declared
                    .iter()
                    .map(|&(_, n)| n)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        let i = iface as usize;
        if a.enabled.len() <= i {
            a.enabled.resize(i + 1, 0);
        }
        let was = a.enabled[i] != 0;
        if on {
            a.enabled[i] |= 1 << bit;
        } else {
            a.enabled[i] &= !(1 << bit);
        }
        match (was, a.enabled[i] != 0) {
            (false, true) => a.active += 1,
            (true, false) => a.active -= 1,
            _ => {}
        }
        Ok(())
    }

    /// Disables every feature of every arc on interface `iface` (the interface is deleted).
    pub fn clear_features(&mut self, iface: u16) {
        for a in &mut self.arcs {
            if let Some(b) = a.enabled.get_mut(iface as usize) {
                if *b != 0 {
                    a.active -= 1;
                }
                *b = 0;
            }
        }
    }

    /// The features of `arc` enabled on `iface`, in arc order.
    pub fn enabled_features(&self, arc: ArcId, iface: u16) -> Vec<&'static str> {
        let Some(a) = self.arcs.get(arc as usize) else {
            return Vec::new();
        };
        let bits = a.enabled.get(iface as usize).copied().unwrap_or(0);
        a.declared
            .iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, &(_, n))| n)
            .collect()
    }

    /// Nanoseconds since the graph was created (the clock every dispatch uses; [`GraphClock`]).
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns()
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
        let mut emitted = std::mem::take(&mut self.emitted);
        nexts[..n].fill(Next::CONSUMED);
        let t0 = self.clock.raw();
        {
            let slot = &mut self.slots[i];
            let mut cx = Cx {
                pool: &mut *pool,
                state: &mut *state,
                now_ns,
                counters: Counters(&mut slot.counters),
                emit: Emit(&mut emitted),
            };
            slot.node.process(&mut cx, pkts, &mut nexts[..n]);
            slot.calls += 1;
            slot.packets += n as u64;
            slot.time_ns += self.clock.since_ns(t0);
        }
        let tracing = self.trace_count > 0;
        let first = nexts.first().copied().unwrap_or(Next::CONSUMED);
        if !tracing && n > 0 && nexts[1..n].iter().all(|&x| x == first) {
            // The whole vector goes one way (the common case): resolve once, move in one go.
            match first.edge_index() {
                Some(e) if (e as usize) < self.slots[i].edges.len() => {
                    let t = self.slots[i].edges[e as usize] as usize;
                    self.slots[t].pending.extend_from_slice(pkts);
                }
                _ if first == Next::CONSUMED => {}
                _ => match first
                    .arc_index()
                    .and_then(|a| Some((a, self.arcs.get(a as usize)?)))
                {
                    Some((_, arc)) if arc.active == 0 => {
                        let t = arc.end as usize;
                        self.slots[t].pending.extend_from_slice(pkts);
                    }
                    Some((a, arc)) => {
                        // One arc, features enabled somewhere: one lookup per packet, the arc
                        // and the sender's place on it resolved once.
                        let after = self.slots[i]
                            .arc_after
                            .get(a as usize)
                            .copied()
                            .unwrap_or(u64::MAX);
                        // The target is looked up again only when the interface changes
                        // (packets come in runs per interface); consecutive packets to the same
                        // node move as one slice.
                        let slots = &mut self.slots;
                        let mut start = 0;
                        let mut iface = arc.key.of(pool.header(pkts[0]));
                        let mut to = arc.target_of(after, iface);
                        for (k, &h) in pkts.iter().enumerate().skip(1) {
                            let i = arc.key.of(pool.header(h));
                            if i == iface {
                                continue;
                            }
                            iface = i;
                            let t = arc.target_of(after, i);
                            if t != to {
                                slots[to as usize]
                                    .pending
                                    .extend_from_slice(&pkts[start..k]);
                                (start, to) = (k, t);
                            }
                        }
                        slots[to as usize].pending.extend_from_slice(&pkts[start..]);
                    }
                    None => {
                        for &h in pkts {
                            self.route(i, pool, h, first, false, false);
                        }
                    }
                },
            }
        } else {
            for (k, &h) in pkts.iter().enumerate() {
                self.route(i, pool, h, nexts[k], tracing, false);
            }
        }
        for &(h, next) in &emitted {
            self.route(i, pool, h, next, tracing, true);
        }
        emitted.clear();
        self.emitted = emitted;
        self.nexts = nexts;
    }

    /// Moves one packet after node `i` decided `next` for it: to a node's pending vector, or to
    /// the pool with its drop counted.
    #[inline(always)]
    fn route(&mut self, i: usize, pool: &mut Pool, h: u32, next: Next, tracing: bool, clone: bool) {
        if tracing && pool.header(h).flags & flags::TRACED != 0 {
            let dest = self.dest(i, pool, h, next);
            self.record_trace(i, pool, h, next, dest, clone);
        }
        // Edges first and without reading the packet: the common case.
        let dest = match next.edge_index() {
            Some(e) => match self.slots[i].edges.get(e as usize) {
                Some(&t) => Dest::Node(t),
                None => Dest::Invalid,
            },
            None => self.dest(i, pool, h, next),
        };
        match dest {
            Dest::Node(t) => self.slots[t as usize].pending.push(h),
            Dest::Drop(r) => {
                if let Some(c) = self.slots[i].drops.get_mut(r as usize) {
                    *c += 1;
                }
                pool.free(h);
            }
            Dest::Consumed => {}
            Dest::Invalid => {
                debug_assert!(false, "node {} used {next:?}", self.slots[i].info.name);
                pool.free(h);
            }
        }
    }

    /// Where `next` sends packet `h` from node `i` (reads the packet's header only for an arc).
    #[inline]
    fn dest(&self, i: usize, pool: &Pool, h: u32, next: Next) -> Dest {
        let slot = &self.slots[i];
        if let Some(e) = next.edge_index() {
            slot.edges
                .get(e as usize)
                .map_or(Dest::Invalid, |&t| Dest::Node(t))
        } else if let Some(a) = next.arc_index() {
            match (self.arcs.get(a as usize), slot.arc_after.get(a as usize)) {
                (Some(arc), Some(&after)) => Dest::Node(arc.target(after, pool.header(h))),
                _ => Dest::Invalid,
            }
        } else if let Some(r) = next.drop_reason() {
            Dest::Drop(r)
        } else {
            Dest::Consumed
        }
    }

    fn record_trace(&mut self, i: usize, pool: &Pool, h: u32, next: Next, dest: Dest, clone: bool) {
        if self.trace.len() >= self.trace_limit {
            return;
        }
        let slot = &self.slots[i];
        let next_name = match dest {
            Dest::Node(t) => self.slots[t as usize].info.name.to_string(),
            Dest::Drop(r) => format!(
                "drop: {}",
                slot.info
                    .drop_reasons
                    .get(r as usize)
                    .copied()
                    .unwrap_or("?")
            ),
            Dest::Consumed => "consumed".to_string(),
            Dest::Invalid => format!("invalid: {next:?}"),
        };
        let detail = slot.node.trace(pool, h);
        self.trace.push(TraceStep {
            packet: pool.header(h).trace_id,
            node: slot.info.name.to_string(),
            next: next_name,
            detail: if clone {
                format!("clone: {detail}")
            } else {
                detail
            },
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

    /// Non-zero drop counters and other node counters, as `show errors` prints them: node by node
    /// in registration order, a node's drop reasons first, then its counters.
    pub fn errors(&self) -> Vec<ErrorCount> {
        let mut out = Vec::new();
        for s in &self.slots {
            let named = s
                .info
                .drop_reasons
                .iter()
                .zip(&s.drops)
                .chain(s.info.counters.iter().zip(&s.counters));
            for (reason, &count) in named {
                if count > 0 {
                    out.push(ErrorCount {
                        node: s.info.name.to_string(),
                        reason: reason.to_string(),
                        count,
                    });
                }
            }
        }
        out
    }

    /// The value of counter `counter` (index into [`NodeInfo::counters`]) of node `node`.
    pub fn counter(&self, node: NodeId, counter: u16) -> u64 {
        self.slots
            .get(node as usize)
            .and_then(|s| s.counters.get(counter as usize))
            .copied()
            .unwrap_or(0)
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

    /// Zeroes every node, drop and node-declared counter.
    pub fn clear_counters(&mut self) {
        for s in &mut self.slots {
            s.calls = 0;
            s.packets = 0;
            s.time_ns = 0;
            s.drops.iter_mut().for_each(|c| *c = 0);
            s.counters.iter_mut().for_each(|c| *c = 0);
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

/// The graph's clock: the CPU's time-stamp counter through `quanta`, scaled to nanoseconds.
///
/// Why not `std::time::Instant`: every dispatch reads the clock once and every node call twice
/// (its time for `show runtime`), and on this VM `clock_gettime` through the vDSO took 10 % of a
/// busy worker's samples at 200 kfps over memif, where vectors are a packet or two long
/// (docs/BENCHMARKS.md §7). A TSC read is one instruction and a multiply-shift. `quanta` checks at
/// start that the TSC is invariant and otherwise reads CLOCK_MONOTONIC itself, so the clock is
/// always correct. Readings of [`GraphClock::now_ns`] never go backwards (a read on another CPU
/// that is behind the last one returns the last one), as the generator's clock does.
#[derive(Debug, Clone)]
pub struct GraphClock {
    clock: quanta::Clock,
    origin: u64,
    last: std::cell::Cell<u64>,
}

impl GraphClock {
    /// A clock whose zero is now (the first one in a process calibrates the TSC, a few ms).
    pub fn new() -> GraphClock {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        GraphClock {
            clock,
            origin,
            last: std::cell::Cell::new(0),
        }
    }

    /// Nanoseconds since the clock was created, never decreasing.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        let t = self.clock.delta_as_nanos(self.origin, self.clock.raw());
        let last = self.last.get();
        if t > last {
            self.last.set(t);
            t
        } else {
            last
        }
    }

    /// A raw reading, for [`GraphClock::since_ns`].
    #[inline]
    pub fn raw(&self) -> u64 {
        self.clock.raw()
    }

    /// Nanoseconds from the raw reading `t0` until now (0 if the counter went back).
    #[inline]
    pub fn since_ns(&self, t0: u64) -> u64 {
        let t1 = self.clock.raw();
        if t1 <= t0 {
            return 0;
        }
        self.clock.delta_as_nanos(t0, t1)
    }
}

impl Default for GraphClock {
    fn default() -> Self {
        GraphClock::new()
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

    /// What one node did with a batch of packets ([`run`]).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct NodeRun {
        /// The decision for each packet handed in, in order.
        pub nexts: Vec<Next>,
        /// Packets the node made, with their decision, in order.
        pub emitted: Vec<(u32, Next)>,
        /// The node's counters after the run ([`NodeInfo::counters`] order), from zero.
        pub counters: Vec<u64>,
    }

    /// Runs `node` on `pkts` (in vectors of at most `FRAME_SIZE`) and returns its decisions, the
    /// packets it made and its counters. Nothing is freed: the caller owns every handle it passed in
    /// and every emitted one.
    pub fn run<S, N: Node<S>>(
        node: &mut N,
        pool: &mut Pool,
        state: &mut S,
        pkts: &[u32],
    ) -> NodeRun {
        let mut nexts = vec![Next::CONSUMED; pkts.len()];
        let mut emitted = Vec::new();
        let mut counters = vec![0; node.info().counters.len()];
        for (p, n) in pkts.chunks(FRAME_SIZE).zip(nexts.chunks_mut(FRAME_SIZE)) {
            let mut cx = Cx {
                pool: &mut *pool,
                state: &mut *state,
                now_ns: 0,
                counters: Counters(&mut counters),
                emit: Emit(&mut emitted),
            };
            node.process(&mut cx, p, n);
        }
        NodeRun {
            nexts,
            emitted,
            counters,
        }
    }

    /// Runs `node` once on `pkts` and returns the decision for each packet (see [`run`] for the
    /// packets it made and its counters). Dropped packets are not freed (the caller owns every
    /// handle it passed in).
    pub fn run_node<S, N: Node<S>>(
        node: &mut N,
        pool: &mut Pool,
        state: &mut S,
        pkts: &[u32],
    ) -> Vec<Next> {
        run(node, pool, state, pkts).nexts
    }
}

#[cfg(test)]
mod tests;
