//! Tests of the graph: dispatch at every burst size, trace, 1 → N emit, node counters, feature arcs.
use super::*;

/// Sends even-length packets to `sink`, drops odd ones as `odd-length`.
struct Classify;
impl Node<Vec<u32>> for Classify {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "classify",
            next_nodes: &["sink"],
            drop_reasons: &["odd-length"],
            counters: &[],
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
            counters: &[],
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

const BURSTS: [usize; 7] = [1, 3, 4, 5, 255, 256, 257];

named_enum! {
    /// Edges of `replicate`.
    enum RepEdge as edge { Sink = "sink" }
}
named_enum! {
    /// Drop reasons of `replicate`.
    enum RepDrop as drop { CloneDropped = "clone-dropped" }
}
named_enum! {
    /// Counters of `replicate`.
    enum RepCounter as counter { Clones = "clones", NoBuffers = "no-buffers" }
}

/// Sends each packet to `sink` and emits `copies` clones of it: all but the last to `sink`, the
/// last one dropped (`clone-dropped`). Counts `clones` (made) and `no-buffers` (not made).
struct Replicate {
    copies: usize,
}
impl Node<Vec<u32>> for Replicate {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "replicate",
            next_nodes: RepEdge::NAMES,
            drop_reasons: RepDrop::NAMES,
            counters: RepCounter::NAMES,
        }
    }
    fn process(&mut self, cx: &mut Cx<'_, Vec<u32>>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            for c in 0..self.copies {
                match cx.pool.clone_packet(h) {
                    Some(k) if c + 1 == self.copies => {
                        cx.emit.push(k, RepDrop::CloneDropped.next())
                    }
                    Some(k) => cx.emit.push(k, RepEdge::Sink.next()),
                    None => {
                        cx.counters.add(RepCounter::NoBuffers.index(), 1);
                        continue;
                    }
                }
                cx.counters.add(RepCounter::Clones.index(), 1);
            }
            *n = RepEdge::Sink.next();
        }
    }
    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        format!("handle-len {}", pool.data(pkt).len())
    }
}

fn packets(pool: &mut Pool, n: usize, len: usize) -> Vec<u32> {
    (0..n)
        .map(|_| {
            let h = pool.alloc().unwrap();
            pool.write_packet(h, &vec![0u8; len]);
            h
        })
        .collect()
}

#[test]
fn emitted_clones_are_enqueued_counted_and_dropped_like_any_packet() {
    for burst in BURSTS {
        let mut g: Graph<Vec<u32>> = Graph::new();
        g.add(Box::new(Replicate { copies: 3 }));
        g.add(Box::new(Sink));
        g.finalize().unwrap();
        let mut pool = Pool::new(4096);
        let pkts = packets(&mut pool, burst, 60);
        let mut kept = Vec::new();
        g.enqueue(&mut pool, 0, &pkts);
        g.dispatch(&mut pool, &mut kept);
        // Original + 2 clones reach the sink; the third clone is dropped and freed.
        assert_eq!(kept.len(), 3 * burst, "burst {burst}");
        assert_eq!(pool.in_use() as usize, 3 * burst, "burst {burst}");
        let errs = g.errors();
        assert_eq!(
            errs,
            vec![
                ErrorCount {
                    node: "replicate".into(),
                    reason: "clone-dropped".into(),
                    count: burst as u64
                },
                ErrorCount {
                    node: "replicate".into(),
                    reason: "clones".into(),
                    count: 3 * burst as u64
                },
            ],
            "burst {burst}"
        );
        let rt = g.runtime();
        assert_eq!(rt[0].packets, burst as u64, "handed-in packets only");
        assert_eq!(rt[0].drops, burst as u64);
        assert_eq!(rt[1].packets, 3 * burst as u64, "the sink got the clones");
        assert_eq!(g.counter(0, RepCounter::Clones.index()), 3 * burst as u64);
        pool.free_bulk(&kept);
        assert_eq!(pool.in_use(), 0);
        g.clear_counters();
        assert!(g.errors().is_empty());
    }
}

#[test]
fn clones_that_cannot_be_made_are_counted() {
    let mut g: Graph<Vec<u32>> = Graph::new();
    g.add(Box::new(Replicate { copies: 4 }));
    g.add(Box::new(Sink));
    g.finalize().unwrap();
    let mut pool = Pool::new(6);
    let pkts = packets(&mut pool, 2, 60);
    let mut kept = Vec::new();
    g.enqueue(&mut pool, 0, &pkts);
    g.dispatch(&mut pool, &mut kept);
    // 6 buffers: 2 originals + 4 clones (3 of the first packet, then 1 of the second).
    let made = g.counter(0, RepCounter::Clones.index());
    let missed = g.counter(0, RepCounter::NoBuffers.index());
    assert_eq!(made + missed, 8);
    assert!(missed > 0);
    pool.free_bulk(&kept);
    assert_eq!(pool.in_use(), 0, "every clone is in the sink or freed");
}

#[test]
fn clones_of_a_traced_packet_are_traced_with_its_number() {
    let mut g: Graph<Vec<u32>> = Graph::new();
    g.add(Box::new(Replicate { copies: 2 }));
    g.add(Box::new(Sink));
    g.finalize().unwrap();
    let mut pool = Pool::new(64);
    g.trace_add(1);
    let pkts = packets(&mut pool, 2, 60);
    let mut kept = Vec::new();
    g.enqueue(&mut pool, 0, &pkts);
    g.dispatch(&mut pool, &mut kept);
    let steps: Vec<(u32, &str, &str, &str)> = g
        .trace()
        .iter()
        .map(|s| {
            (
                s.packet,
                s.node.as_str(),
                s.next.as_str(),
                s.detail.as_str(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            (1, "replicate", "sink", "handle-len 60"),
            (1, "replicate", "sink", "clone: handle-len 60"),
            (
                1,
                "replicate",
                "drop: clone-dropped",
                "clone: handle-len 60"
            ),
            (1, "sink", "consumed", ""),
            (1, "sink", "consumed", ""),
        ]
    );
    pool.free_bulk(&kept);
}

/// Where packets went: `(node, handle)` per visit, and what the sink kept.
#[derive(Default)]
struct Log {
    visits: Vec<(&'static str, u32)>,
    kept: Vec<u32>,
}

impl Log {
    /// The nodes packet `h` visited, in order.
    fn path(&self, h: u32) -> Vec<&'static str> {
        self.visits
            .iter()
            .filter(|&&(_, v)| v == h)
            .map(|&(n, _)| n)
            .collect()
    }
}

/// Sends everything along arc 0.
struct Start;
impl Node<Log> for Start {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "start",
            next_nodes: &[],
            drop_reasons: &[],
            counters: &[],
        }
    }
    fn process(&mut self, _cx: &mut Cx<'_, Log>, _pkts: &[u32], nexts: &mut [Next]) {
        nexts.fill(Next::arc(0));
    }
}

/// A feature: logs the packet, then continues along arc 0.
struct Feature(&'static str);
impl Node<Log> for Feature {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: self.0,
            next_nodes: &[],
            drop_reasons: &[],
            counters: &[],
        }
    }
    fn process(&mut self, cx: &mut Cx<'_, Log>, pkts: &[u32], nexts: &mut [Next]) {
        for &h in pkts {
            cx.state.visits.push((self.0, h));
        }
        nexts.fill(Next::arc(0));
    }
}

/// The arc's end: keeps packets.
struct End;
impl Node<Log> for End {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "end",
            next_nodes: &[],
            drop_reasons: &[],
            counters: &[],
        }
    }
    fn process(&mut self, cx: &mut Cx<'_, Log>, pkts: &[u32], _nexts: &mut [Next]) {
        cx.state.kept.extend_from_slice(pkts);
    }
}

fn arc_graph() -> Graph<Log> {
    let mut g = Graph::new();
    g.add(Box::new(Start));
    // Registered out of order: the arc orders them by `order`.
    g.add(Box::new(Feature("f-late")));
    g.add(Box::new(Feature("f-early")));
    g.add(Box::new(Feature("f-middle")));
    g.add(Box::new(End));
    let a = g.add_arc("test-arc", "end", ArcKey::Rx);
    g.add_feature(a, "f-late", 30).unwrap();
    g.add_feature(a, "f-early", 10).unwrap();
    g.add_feature(a, "f-middle", 20).unwrap();
    g.finalize().unwrap();
    g
}

#[test]
fn arcs_visit_the_features_enabled_on_each_interface_in_arc_order() {
    for burst in BURSTS {
        let mut g = arc_graph();
        let a = g.arc_id("test-arc").unwrap();
        assert_eq!(g.arc_features(a), vec!["f-early", "f-middle", "f-late"]);
        let mut pool = Pool::new(4096);
        let mut log = Log::default();
        // No feature enabled anywhere: straight to the end.
        let pkts = packets(&mut pool, burst, 60);
        g.enqueue(&mut pool, 0, &pkts);
        g.dispatch(&mut pool, &mut log);
        assert!(log.visits.is_empty());
        assert_eq!(log.kept.len(), burst);
        // Interface 1: late and early (enabled in that order); interface 2: all; 0: none.
        g.set_feature(a, 1, "f-late", true).unwrap();
        g.set_feature(a, 1, "f-early", true).unwrap();
        for f in ["f-middle", "f-late", "f-early"] {
            g.set_feature(a, 2, f, true).unwrap();
        }
        assert_eq!(g.enabled_features(a, 1), vec!["f-early", "f-late"]);
        let pkts = packets(&mut pool, burst, 60);
        for (k, &h) in pkts.iter().enumerate() {
            pool.header_mut(h).rx_port = (k % 3) as u16;
        }
        g.enqueue(&mut pool, 0, &pkts);
        log.visits.clear();
        g.dispatch(&mut pool, &mut log);
        for (k, &h) in pkts.iter().enumerate() {
            let path = log.path(h);
            let want: &[&str] = match k % 3 {
                0 => &[],
                1 => &["f-early", "f-late"],
                _ => &["f-early", "f-middle", "f-late"],
            };
            assert_eq!(path, want, "burst {burst} packet {k}");
        }
        assert_eq!(log.kept.len(), 2 * burst);
        // Disabled again: straight to the end.
        for f in ["f-early", "f-late"] {
            g.set_feature(a, 1, f, false).unwrap();
        }
        g.clear_features(2);
        let pkts = packets(&mut pool, burst, 60);
        for (k, &h) in pkts.iter().enumerate() {
            pool.header_mut(h).rx_port = (k % 3) as u16;
        }
        log.visits.clear();
        g.enqueue(&mut pool, 0, &pkts);
        g.dispatch(&mut pool, &mut log);
        assert!(log.visits.is_empty());
        assert_eq!(log.kept.len(), 3 * burst);
        pool.free_bulk(&log.kept);
        assert_eq!(pool.in_use(), 0);
    }
}

/// The arc is resolved once per run of packets on one interface: runs of every length (1 to 7),
/// consecutive interfaces with the same features (0 and 3: none; 2 and 4: all) and interfaces
/// without any setting (5) still send each packet where it would go alone.
#[test]
fn arc_runs_of_one_interface_go_where_each_packet_would_alone() {
    for burst in BURSTS {
        let mut g = arc_graph();
        let a = g.arc_id("test-arc").unwrap();
        g.set_feature(a, 1, "f-middle", true).unwrap();
        for iface in [2, 4] {
            for f in ["f-early", "f-middle", "f-late"] {
                g.set_feature(a, iface, f, true).unwrap();
            }
        }
        let mut pool = Pool::new(4096);
        let mut log = Log::default();
        let pkts = packets(&mut pool, burst, 60);
        let order = [0u16, 3, 1, 2, 4, 5, 0, 1];
        let mut ifaces = Vec::new();
        let mut k = 0;
        while ifaces.len() < burst {
            for _ in 0..(k % 7 + 1) {
                ifaces.push(order[k % order.len()]);
            }
            k += 1;
        }
        for (&h, &i) in pkts.iter().zip(&ifaces) {
            pool.header_mut(h).rx_port = i;
        }
        g.enqueue(&mut pool, 0, &pkts);
        g.dispatch(&mut pool, &mut log);
        for (&h, &i) in pkts.iter().zip(&ifaces) {
            let path = log.path(h);
            let want: &[&str] = match i {
                1 => &["f-middle"],
                2 | 4 => &["f-early", "f-middle", "f-late"],
                _ => &[],
            };
            assert_eq!(path, want, "burst {burst} packet {h} on interface {i}");
        }
        assert_eq!(log.kept.len(), burst);
        pool.free_bulk(&log.kept);
        assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn arc_trace_names_the_feature_taken_and_bad_features_are_errors() {
    let mut g = arc_graph();
    let a = g.arc_id("test-arc").unwrap();
    g.set_feature(a, 0, "f-middle", true).unwrap();
    let mut pool = Pool::new(16);
    let mut log = Log::default();
    g.trace_add(1);
    let pkts = packets(&mut pool, 1, 60);
    g.enqueue(&mut pool, 0, &pkts);
    g.dispatch(&mut pool, &mut log);
    let steps: Vec<(&str, &str)> = g
        .trace()
        .iter()
        .map(|s| (s.node.as_str(), s.next.as_str()))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("start", "f-middle"),
            ("f-middle", "end"),
            ("end", "consumed")
        ]
    );
    assert!(matches!(
        g.set_feature(a, 0, "start", true),
        Err(GraphError::NotAFeature { .. })
    ));
    assert!(matches!(
        g.set_feature(7, 0, "f-middle", true),
        Err(GraphError::UnknownArc(_))
    ));
    let mut bad: Graph<Log> = Graph::new();
    bad.add(Box::new(Start));
    let b = bad.add_arc("x", "end", ArcKey::Rx);
    bad.add_feature(b, "start", 0).unwrap();
    assert_eq!(
        bad.finalize().unwrap_err(),
        GraphError::UnknownArcNode {
            arc: "x",
            node: "end"
        }
    );
    pool.free_bulk(&log.kept);
}

#[test]
fn next_encodings_do_not_overlap() {
    for i in [0u16, 1, 100, 0x3ffe] {
        assert_eq!(Next::edge(i).edge_index(), Some(i));
        assert_eq!(Next::edge(i).arc_index(), None);
        assert_eq!(Next::arc(i).arc_index(), Some(i));
        assert_eq!(Next::arc(i).edge_index(), None);
        assert_eq!(Next::arc(i).drop_reason(), None);
        assert_eq!(Next::drop(i).drop_reason(), Some(i));
        assert_eq!(Next::drop(i).arc_index(), None);
    }
    assert_eq!(Next::CONSUMED.edge_index(), None);
    assert_eq!(Next::CONSUMED.arc_index(), None);
    assert_eq!(Next::CONSUMED.drop_reason(), None);
}
