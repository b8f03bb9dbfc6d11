//! [`Switch`]: one worker's whole dataplane — the buffer [`Pool`], the [`Graph`] built from the
//! features ([`crate::feature::FEATURES`]) and the [`SwitchState`] they work on — with
//! [`Switch::poll_once`] (one iteration of the poll loop) and the control API used by the control
//! crate: here ports, interfaces, capture, counters, trace and the `show` commands (results derive
//! `Serialize`); each feature adds its own methods in its folder (bridges, xconnects and static MACs
//! in `l2/control.rs`).
//!
//! The switch is driven either directly (tests, benchmarks: call `poll_once`) or on its own thread by
//! [`crate::worker::spawn`], which runs control calls between iterations.
//!
//! Every mutating call checks everything first and changes nothing when it returns an error.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::{Pool, PoolStats, FRAME_SIZE};
use vecswitch_graph::{ArcId, ErrorCount, Graph, NodeId, NodeRuntime, TraceStep};
use vecswitch_ports::{LinkState, Port, PortStats};

use crate::capture::{check_count, CaptureInfo, PortCapture};
use crate::error::{list, SwitchError};
use crate::feature::{build_graph, FEATURES};
use crate::interface::{Interface, InterfaceInfo, Service, SwIfIdx, INPUT_ARC, OUTPUT_ARC};
use crate::state::{BdIdx, PortIdx, PortSlot, RxRun, SwitchState};

/// How a switch is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SwitchConfig {
    /// Packet buffers in the pool.
    pub buffers: u32,
    /// Most MAC table entries over all bridges (the table is preallocated for this many).
    pub mac_table_entries: usize,
    /// Most packets taken from one port per poll (≤ 256, one frame).
    pub rx_burst: usize,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffers: 16_384,
            mac_table_entries: 1 << 20,
            rx_burst: FRAME_SIZE,
        }
    }
}

/// Ports' `poll_control` is called once every this many poll iterations while traffic flows, and
/// on an idle poll when [`CONTROL_IDLE_INTERVAL_NS`] has passed since the last call: that is the
/// worker's idle flush (an AF_PACKET port hands the kernel any TX frame still waiting in its ring,
/// so no frame waits there because traffic stopped) and its check of the ports' control channels.
pub const CONTROL_EVERY_POLLS: u64 = 1024;
/// Least time between two idle-poll `poll_control` rounds. Calling it on *every* idle poll cost a
/// `recvmsg` system call per memif port per poll: 55 % of a busy-polling worker's samples at 200
/// kfps over memif (perf, 2026-11-24, docs/BENCHMARKS.md §7), time in which no port was polled.
/// 50 µs keeps the idle flush and link changes prompt and the syscalls under 5 % of an idle core.
pub const CONTROL_IDLE_INTERVAL_NS: u64 = 50_000;
const _: () = assert!(CONTROL_EVERY_POLLS.is_power_of_two());
/// MAC table slots examined per aging step.
pub const AGE_SLOTS_PER_STEP: usize = 512;
/// Least time between two aging steps. At 1,000 steps/s × 512 slots, a table for 1M entries
/// (2M slots) is swept in about 4 s — far below any sensible MAC age — for a cost of about 0.5 ms of
/// CPU per second.
pub const AGE_STEP_INTERVAL_NS: u64 = 1_000_000;

const MAX_PORTS: usize = u16::MAX as usize;

/// A port's receive clock (`Switch::port_rx`).
#[derive(Debug, Clone, Copy, Default)]
struct RxClock {
    calls: u64,
    packets: u64,
    time_ns: u64,
}

/// Counters of the poll loop, in `show runtime`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LoopStats {
    /// Poll iterations.
    pub polls: u64,
    /// Iterations that received nothing.
    pub idle_polls: u64,
    /// Times the worker thread slept because it was idle (see `worker`).
    pub idle_sleeps: u64,
    /// Of those, times it slept in `poll(2)` on the ports' descriptors (every port could be
    /// waited on, [`vecswitch_ports::RxWait`]) rather than for a fixed back-off (see `worker`,
    /// "Waiting on the ports").
    #[serde(default)]
    pub idle_waits: u64,
    /// Of those, waits that a descriptor ended before their timeout (a frame, a peer's message,
    /// a control call).
    #[serde(default)]
    pub idle_wakes: u64,
    /// Short breaks a real-time worker took so that the kernel's RT throttling never stops it
    /// for tens of milliseconds at once (see `worker`, "Real-time breaks").
    #[serde(default)]
    pub rt_breaks: u64,
    /// Packets received from all ports.
    pub rx_packets: u64,
    /// Nanoseconds spent in iterations that received something, from the first `rx_burst` to
    /// the end of dispatch (port I/O included): the worker's busy time, for the lab's device-cost
    /// comparison (busy fraction = `busy_ns` / elapsed; clocks = `busy_ns` × `clock_hz`).
    pub busy_ns: u64,
    /// Received packets per second over the last full second.
    pub packets_per_s: f64,
    /// Longest time between the starts of two poll iterations, ns: how long the worker was away
    /// from its ports at worst — descheduled by the host, a long control call, or an idle sleep
    /// (at most 100 µs, see `worker`). A port's RX ring must hold this much traffic.
    pub max_poll_gap_ns: u64,
    /// Every gap between the starts of two poll iterations, by size ([`poll_gap_bucket`]):
    /// `poll_gaps[0]` counts gaps under 1,024 ns, `poll_gaps[i]` gaps of 2^(9+i) up to 2^(10+i) ns,
    /// the last one every gap of 2^26 ns (67 ms) or more.
    #[serde(default)]
    pub poll_gaps: [u64; POLL_GAP_BUCKETS],
    /// Longest gap between two polls that contained no sleep the worker chose (an idle back-off or
    /// a real-time break): the worker's longest stall.
    #[serde(default)]
    pub max_stall_ns: u64,
    /// Of one gap, the most time that neither the switch's own work (below) nor a sleep it chose
    /// accounts for: the thread was descheduled, or held in the kernel (a page fault, an
    /// interrupt), for this long. A stall close to this figure was the host's; a stall close to
    /// one of the `max_*_ns` below was the switch's own.
    #[serde(default)]
    pub max_off_cpu_ns: u64,
    /// Longest single call of each part of an iteration: receiving from every port (`rx_burst`),
    /// running the graph (transmit included), the ports' housekeeping (`poll_control`), a MAC
    /// aging step, the features' timers, and one control call (a `ctl` verb run on the worker).
    #[serde(default)]
    pub max_rx_ns: u64,
    #[serde(default)]
    pub max_graph_ns: u64,
    #[serde(default)]
    pub max_port_control_ns: u64,
    #[serde(default)]
    pub max_aging_ns: u64,
    #[serde(default)]
    pub max_timers_ns: u64,
    #[serde(default)]
    pub max_control_call_ns: u64,
    /// Gaps of [`LONG_GAP_NS`] or more, counted.
    #[serde(default)]
    pub long_gaps: u64,
}

/// A gap between two polls at least this long is a *long gap*: counted, and kept in
/// [`RuntimeInfo::long_gaps`] with what explains it. 500 µs is half of what a 1,024-slot memif
/// ring holds at 2 Mfps (DPDK's and VPP's default ring size).
pub const LONG_GAP_NS: u64 = 500_000;

/// How many of the latest long gaps `show runtime` keeps.
pub const LONG_GAPS_KEPT: usize = 64;

/// One long gap between two polls ([`LONG_GAP_NS`]), with what accounts for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LongGap {
    /// When the poll after the gap began (the switch clock, ns; compare with
    /// [`RuntimeInfo::now_ns`]).
    pub at_ns: u64,
    /// The gap, ns.
    pub gap_ns: u64,
    /// Sleep the worker chose inside it (idle back-off, real-time break), at most, ns.
    pub slept_ns: u64,
    /// The switch's own work inside it (the previous iteration, timers, control calls), ns.
    pub work_ns: u64,
    /// The rest: the thread was descheduled or held in the kernel, ns.
    pub off_cpu_ns: u64,
    /// The fullest receive ring at the poll after the gap: entries waiting, and the ring's size
    /// (0/0 where no port shows its ring). Waiting = size means the peer's frames were refused.
    pub ring_waiting: u32,
    pub ring_size: u32,
}

/// Buckets of [`LoopStats::poll_gaps`].
pub const POLL_GAP_BUCKETS: usize = 18;

/// The [`LoopStats::poll_gaps`] bucket of a gap of `gap_ns`.
pub fn poll_gap_bucket(gap_ns: u64) -> usize {
    let bits = (u64::BITS - gap_ns.leading_zeros()) as usize;
    bits.saturating_sub(10).min(POLL_GAP_BUCKETS - 1)
}

/// The smallest gap, ns, that falls in bucket `i` of [`LoopStats::poll_gaps`].
pub fn poll_gap_bucket_floor_ns(i: usize) -> u64 {
    if i == 0 {
        0
    } else {
        1u64 << (9 + i.min(POLL_GAP_BUCKETS - 1))
    }
}

/// `show runtime`: per-node counters and the poll loop's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    pub nodes: Vec<NodeRuntime>,
    #[serde(rename = "loop")]
    pub loop_stats: LoopStats,
    /// Clock rate used for clocks/packet, Hz.
    pub clock_hz: f64,
    /// The switch clock when this was read, ns (the time base of `long_gaps`).
    #[serde(default)]
    pub now_ns: u64,
    /// The latest long gaps between polls, oldest first (at most [`LONG_GAPS_KEPT`]).
    #[serde(default)]
    pub long_gaps: Vec<LongGap>,
}

/// A port's service as `show ports` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ServiceInfo {
    None,
    Xconnect { to: String },
    Bridge { bridge: String },
}

/// One line of `show ports`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortInfo {
    pub index: u16,
    pub name: String,
    pub admin_up: bool,
    pub link: LinkState,
    pub service: ServiceInfo,
    pub stats: PortStats,
    /// The backend's own description.
    pub describe: String,
    /// The receive ring's size and peak occupancy at a poll, where the backend can see it (memif).
    /// Every port is polled once per iteration, so a port's longest gap between two polls is the
    /// loop's (`show runtime`).
    #[serde(default)]
    pub rx_ring: Option<vecswitch_ports::RingFill>,
    /// Packet capture on this port, if one was started.
    pub capture: Option<CaptureInfo>,
}

fn names(v: Vec<&'static str>) -> Vec<String> {
    v.into_iter().map(str::to_string).collect()
}

/// One worker's dataplane. See the module doc.
#[derive(Debug)]
pub struct Switch {
    pub(crate) pool: Pool,
    pub(crate) graph: Graph<SwitchState>,
    pub(crate) state: SwitchState,
    /// `interface-rx`, where received vectors enter the graph.
    rx_node: NodeId,
    config: SwitchConfig,
    rx_scratch: Vec<u32>,
    /// Each port's receive clock (by port index): `rx_burst` calls that returned frames, the
    /// frames, and their time with the capture and the enqueue, as `show runtime`'s `NAME-rx`
    /// nodes (`show_runtime`).
    port_rx: Vec<RxClock>,
    age_scratch: Vec<u32>,
    clock_offset_ns: u64,
    last_age_ns: u64,
    stats: LoopStats,
    rate_mark: (u64, u64),
    /// Monotonic time of the last poll iteration's start (0: none since the counters were cleared).
    last_poll_ns: u64,
    /// When the ports' `poll_control` last ran (graph clock, ns).
    last_control_ns: u64,
    /// Since the last poll iteration began: time spent in the switch's own work outside
    /// `poll_once` (timers, control calls), sleep the worker chose, and whether it slept.
    pub(crate) gap_work_ns: u64,
    pub(crate) gap_sleep_ns: u64,
    pub(crate) gap_slept: bool,
    /// How long the last `poll_once` itself ran.
    last_poll_work_ns: u64,
    /// The latest long gaps (ring buffer of [`LONG_GAPS_KEPT`]); a gap found at a poll's start is
    /// completed with the ring fill after that poll's receive.
    long_gaps: std::collections::VecDeque<LongGap>,
    pending_long_gap: Option<LongGap>,
}

impl Default for Switch {
    fn default() -> Self {
        Switch::new(SwitchConfig::default())
    }
}

impl Switch {
    /// A switch with no ports and no bridges.
    pub fn new(config: SwitchConfig) -> Switch {
        // The feature set is fixed and its edges are checked by the tests: a failure here is a bug
        // in this crate, not something a user can cause.
        let graph = build_graph(FEATURES).expect("the switch's features resolve");
        let rx_node = graph
            .node_id("interface-rx")
            .expect("interface-rx registered");
        Switch {
            pool: Pool::new(config.buffers),
            graph,
            state: SwitchState::new(config.mac_table_entries),
            rx_node,
            config: SwitchConfig {
                rx_burst: config.rx_burst.clamp(1, FRAME_SIZE),
                ..config
            },
            rx_scratch: Vec::with_capacity(FRAME_SIZE),
            port_rx: Vec::new(),
            age_scratch: Vec::new(),
            clock_offset_ns: 0,
            last_age_ns: 0,
            stats: LoopStats::default(),
            rate_mark: (0, 0),
            last_poll_ns: 0,
            last_control_ns: 0,
            gap_work_ns: 0,
            gap_sleep_ns: 0,
            gap_slept: false,
            last_poll_work_ns: 0,
            long_gaps: std::collections::VecDeque::with_capacity(LONG_GAPS_KEPT),
            pending_long_gap: None,
        }
    }

    /// The configuration the switch was built with.
    pub fn config(&self) -> SwitchConfig {
        self.config
    }

    // ----- fast path ---------------------------------------------------------------------------

    /// The switch clock, nanoseconds: the graph's monotonic clock plus what [`Switch::advance_clock`]
    /// added.
    pub fn now_ns(&self) -> u64 {
        self.graph.now_ns() + self.clock_offset_ns
    }

    /// Moves the switch clock forward (for tests and simulations of MAC aging); aging runs on the
    /// next poll.
    pub fn advance_clock(&mut self, by: Duration) {
        self.clock_offset_ns += by.as_nanos() as u64;
        self.last_age_ns = 0;
    }

    /// One iteration of the poll loop: receive up to `rx_burst` packets from every port, run them
    /// through the graph, free what was sent, run an aging step when one is due and the ports'
    /// housekeeping at a low rate. Returns the number of packets received.
    pub fn poll_once(&mut self) -> usize {
        let mono = self.graph.now_ns();
        if self.last_poll_ns != 0 {
            self.note_gap(mono.saturating_sub(self.last_poll_ns));
        }
        self.gap_work_ns = 0;
        self.gap_sleep_ns = 0;
        self.gap_slept = false;
        self.last_poll_ns = mono;
        let now = mono + self.clock_offset_ns;
        self.state.now_s = (now / 1_000_000_000) as u32;
        self.state.rx_ns = now;
        let mut received = 0;
        if self.port_rx.len() < self.state.ports.len() {
            self.port_rx
                .resize(self.state.ports.len(), RxClock::default());
        }
        // One clock read per port: each port's receive ends where the next one's begins.
        let mut t_prev = mono;
        for i in 0..self.state.ports.len() {
            let Some(slot) = self.state.ports[i].as_mut() else {
                continue;
            };
            self.rx_scratch.clear();
            let n = slot
                .port
                .rx_burst(&mut self.pool, &mut self.rx_scratch, self.config.rx_burst);
            if n == 0 {
                t_prev = self.graph.now_ns();
                continue;
            }
            if let Some(c) = slot.capture.as_mut() {
                c.record(&self.pool, &self.rx_scratch);
            }
            // interface-rx stamps the port and time on each packet (it is the receive node).
            self.state.rx_runs.push_back(RxRun {
                port: i as PortIdx,
                count: self.rx_scratch.len() as u32,
            });
            self.graph
                .enqueue(&mut self.pool, self.rx_node, &self.rx_scratch);
            received += n;
            let t = self.graph.now_ns();
            let c = &mut self.port_rx[i];
            c.calls += 1;
            c.packets += n as u64;
            c.time_ns += t.saturating_sub(t_prev);
            t_prev = t;
        }
        if self.pending_long_gap.is_some() {
            self.finish_long_gap();
        }
        let rx_end = self.graph.now_ns();
        self.stats.max_rx_ns = self.stats.max_rx_ns.max(rx_end - mono);
        if received > 0 {
            self.dispatch();
            let end = self.graph.now_ns();
            self.stats.max_graph_ns = self.stats.max_graph_ns.max(end - rx_end);
            self.stats.busy_ns += end - mono;
        }
        self.stats.polls += 1;
        self.stats.rx_packets += received as u64;
        if received == 0 {
            self.stats.idle_polls += 1;
        }
        let control_due = if received == 0 {
            mono.saturating_sub(self.last_control_ns) >= CONTROL_IDLE_INTERVAL_NS
        } else {
            self.stats.polls & (CONTROL_EVERY_POLLS - 1) == 0
        };
        if control_due {
            self.last_control_ns = mono;
            let t0 = self.graph.now_ns();
            for p in self.state.ports.iter_mut().flatten() {
                p.port.poll_control();
            }
            let t = self.graph.now_ns() - t0;
            self.stats.max_port_control_ns = self.stats.max_port_control_ns.max(t);
        }
        let (last_age, since_age) = (self.last_age_ns, now.saturating_sub(self.last_age_ns));
        if since_age >= AGE_STEP_INTERVAL_NS {
            self.last_age_ns = now;
            let t0 = self.graph.now_ns();
            // After a wait on the ports (worker) more than one step's time has passed: sweep as
            // many slots as the steps missed (at most 16), so the table is swept as fast.
            // (`last_age_ns` 0: the first step, or one `advance_clock` asked for.)
            let steps = if last_age == 0 {
                1
            } else {
                (since_age / AGE_STEP_INTERVAL_NS).clamp(1, 16) as usize
            };
            self.age_step(AGE_SLOTS_PER_STEP * steps);
            let t = self.graph.now_ns() - t0;
            self.stats.max_aging_ns = self.stats.max_aging_ns.max(t);
        }
        let (t0, p0) = self.rate_mark;
        if now.saturating_sub(t0) >= 1_000_000_000 {
            if t0 != 0 {
                let dt = (now - t0) as f64 / 1e9;
                self.stats.packets_per_s = (self.stats.rx_packets - p0) as f64 / dt;
            }
            self.rate_mark = (now, self.stats.rx_packets);
        }
        self.last_poll_work_ns = self.graph.now_ns().saturating_sub(mono);
        received
    }

    /// Counts one gap between the starts of two poll iterations (see [`LoopStats`]).
    fn note_gap(&mut self, gap: u64) {
        let l = &mut self.stats;
        l.max_poll_gap_ns = l.max_poll_gap_ns.max(gap);
        l.poll_gaps[poll_gap_bucket(gap)] += 1;
        if !self.gap_slept {
            l.max_stall_ns = l.max_stall_ns.max(gap);
        }
        let work = self.last_poll_work_ns + self.gap_work_ns;
        let off_cpu = gap.saturating_sub(work + self.gap_sleep_ns);
        l.max_off_cpu_ns = l.max_off_cpu_ns.max(off_cpu);
        if gap >= LONG_GAP_NS {
            l.long_gaps += 1;
            self.pending_long_gap = Some(LongGap {
                at_ns: self.last_poll_ns + gap + self.clock_offset_ns,
                gap_ns: gap,
                slept_ns: self.gap_sleep_ns.min(gap),
                work_ns: work.min(gap),
                off_cpu_ns: off_cpu,
                ring_waiting: 0,
                ring_size: 0,
            });
        }
    }

    /// Completes the pending long gap with the fullest receive ring seen now, and keeps it.
    fn finish_long_gap(&mut self) {
        let Some(mut g) = self.pending_long_gap.take() else {
            return;
        };
        for p in self.state.ports.iter().flatten() {
            if let Some(r) = p.port.rx_ring() {
                // The fullest by fraction: waiting / size, compared without division.
                if g.ring_size == 0
                    || u64::from(r.last) * u64::from(g.ring_size)
                        > u64::from(g.ring_waiting) * u64::from(r.size)
                {
                    g.ring_waiting = r.last;
                    g.ring_size = r.size;
                }
            }
        }
        if self.long_gaps.len() == LONG_GAPS_KEPT {
            self.long_gaps.pop_front();
        }
        self.long_gaps.push_back(g);
    }

    /// Adds `ns` of the switch's own work done outside `poll_once` since the last poll (the
    /// worker's control calls, the features' timers): the gap it explains is not the host's.
    pub(crate) fn note_work(&mut self, ns: u64) {
        self.gap_work_ns += ns;
    }

    /// Runs the graph on what is queued and frees what was sent.
    fn dispatch(&mut self) {
        self.graph.dispatch(&mut self.pool, &mut self.state);
        self.pool.free_bulk(&self.state.tx_done);
        self.state.tx_done.clear();
        // interface-rx consumes every run it was given.
        debug_assert!(self.state.rx_runs.is_empty());
        self.state.rx_runs.clear();
    }

    /// Runs one aging step over `slots` MAC table slots now; returns the entries removed.
    pub fn age_step(&mut self, slots: usize) -> usize {
        self.state.now_s = (self.now_ns() / 1_000_000_000) as u32;
        self.state.mac_ages(&mut self.age_scratch);
        if self.age_scratch.iter().all(|&a| a == 0) || self.state.macs.is_empty() {
            return 0; // nothing can age: skip the scan
        }
        let n = self
            .state
            .macs
            .age_step(self.state.now_s, slots, &self.age_scratch);
        self.state.aged_out += n as u64;
        n
    }

    /// Runs a whole aging sweep now (every slot once); returns the entries removed.
    pub fn age_all(&mut self) -> usize {
        let slots = self.state.macs.slot_count();
        self.age_step(slots)
    }

    /// Injects packets as if port `rx_port` had received them (for tests, benchmarks and fuzzing:
    /// bypasses the port's `rx_burst`, not `interface-rx`) and runs the graph. The switch owns the
    /// handles afterwards.
    pub fn inject(&mut self, rx_port: PortIdx, pkts: &[u32]) {
        let now = self.now_ns();
        self.state.now_s = (now / 1_000_000_000) as u32;
        self.state.rx_ns = now;
        self.state.rx_runs.push_back(RxRun {
            port: rx_port,
            count: pkts.len() as u32,
        });
        self.graph.enqueue(&mut self.pool, self.rx_node, pkts);
        self.dispatch();
    }

    /// The buffer pool (tests, benchmarks and ports built outside the switch).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The buffer pool, writable (to build packets for [`Switch::inject`]).
    pub fn pool_mut(&mut self) -> &mut Pool {
        &mut self.pool
    }

    /// The nodes' state (read-only: change it through the control API).
    pub fn state(&self) -> &SwitchState {
        &self.state
    }

    /// The graph (read-only).
    pub fn graph(&self) -> &Graph<SwitchState> {
        &self.graph
    }

    // ----- lookups -------------------------------------------------------------------------------

    pub(crate) fn port_idx(&self, name: &str) -> Result<PortIdx, SwitchError> {
        self.state
            .port_index(name)
            .ok_or_else(|| SwitchError::NoPort {
                name: name.to_string(),
                known: list(&self.state.port_names()),
            })
    }

    pub(crate) fn bridge_idx(&self, name: &str) -> Result<BdIdx, SwitchError> {
        self.state
            .bridge_index(name)
            .ok_or_else(|| SwitchError::NoBridge {
                name: name.to_string(),
                known: list(&self.state.bridge_names()),
            })
    }

    /// The interface called `name` (a port's main interface is named as the port; the error says
    /// "port" as the control API did before interfaces).
    pub(crate) fn iface_idx(&self, name: &str) -> Result<SwIfIdx, SwitchError> {
        self.state
            .interface_index(name)
            .ok_or_else(|| SwitchError::NoPort {
                name: name.to_string(),
                known: list(&self.state.interface_names()),
            })
    }

    pub(crate) fn iface(&self, idx: SwIfIdx) -> &Interface {
        // Only called with indices just resolved from a name.
        self.state.interfaces[idx as usize]
            .as_ref()
            .expect("resolved interface index")
    }

    pub(crate) fn iface_mut(&mut self, idx: SwIfIdx) -> &mut Interface {
        self.state.interfaces[idx as usize]
            .as_mut()
            .expect("resolved interface index")
    }

    pub(crate) fn iface_name(&self, idx: SwIfIdx) -> String {
        self.state
            .interface(idx)
            .map_or_else(|| format!("#{idx}"), |i| i.name.clone())
    }

    fn slot(&self, idx: PortIdx) -> &PortSlot {
        // Only called with indices just resolved from a name.
        self.state.ports[idx as usize]
            .as_ref()
            .expect("resolved port index")
    }

    fn slot_mut(&mut self, idx: PortIdx) -> &mut PortSlot {
        self.state.ports[idx as usize]
            .as_mut()
            .expect("resolved port index")
    }

    pub(crate) fn bridge_name(&self, idx: BdIdx) -> String {
        self.state
            .bridge(idx)
            .map_or_else(|| format!("#{idx}"), |b| b.name.clone())
    }

    pub(crate) fn describe_service(&self, s: Service) -> String {
        match s {
            Service::None => "none".to_string(),
            Service::Xconnect { to } => format!("xconnect to `{}`", self.iface_name(to)),
            Service::Bridge { bd } => format!("member of bridge `{}`", self.bridge_name(bd)),
        }
    }

    fn service_info(&self, s: Service) -> ServiceInfo {
        match s {
            Service::None => ServiceInfo::None,
            Service::Xconnect { to } => ServiceInfo::Xconnect {
                to: self.iface_name(to),
            },
            Service::Bridge { bd } => ServiceInfo::Bridge {
                bridge: self.bridge_name(bd),
            },
        }
    }

    pub(crate) fn check_name(what: &'static str, name: &str) -> Result<(), SwitchError> {
        let ok = !name.is_empty()
            && name.chars().count() <= 64
            && !name.chars().any(|c| c.is_whitespace() || c.is_control());
        if ok {
            Ok(())
        } else {
            Err(SwitchError::InvalidName {
                what,
                name: name.to_string(),
            })
        }
    }

    // ----- ports ---------------------------------------------------------------------------------

    /// Adds a port and its main interface (administratively up, no service). Returns its index.
    pub fn add_port(&mut self, name: &str, port: Box<dyn Port>) -> Result<PortIdx, SwitchError> {
        Self::check_name("port", name)?;
        if self.state.port_index(name).is_some() {
            return Err(SwitchError::PortExists {
                name: name.to_string(),
            });
        }
        if self.state.interface_index(name).is_some() {
            return Err(SwitchError::PortExists {
                name: name.to_string(),
            });
        }
        // A free index for the port whose main interface index is free too (they are the same).
        let free = (0..self.state.ports.len()).find(|&i| {
            self.state.ports[i].is_none()
                && self.state.interfaces.get(i).is_none_or(Option::is_none)
        });
        let i = match free {
            Some(i) => i,
            None if self.state.ports.len() >= MAX_PORTS => {
                return Err(SwitchError::TooMany {
                    what: "ports",
                    max: MAX_PORTS,
                })
            }
            None => self.state.ports.len(),
        };
        self.state
            .insert_port(i as PortIdx, PortSlot::new(name, port));
        if let Some(c) = self.port_rx.get_mut(i) {
            *c = RxClock::default();
        }
        Ok(i as PortIdx)
    }

    /// Deletes a port and gives it back. Its own service goes with it (it leaves its bridge, whose
    /// MAC entries on it are flushed; its xconnect is removed). Fails if another port cross-connects
    /// to it.
    pub fn delete_port(&mut self, name: &str) -> Result<Box<dyn Port>, SwitchError> {
        let idx = self.port_idx(name)?;
        let users: Vec<String> = self
            .state
            .interfaces
            .iter()
            .enumerate()
            .filter_map(|(i, f)| {
                f.as_ref()
                    .filter(|f| i != idx as usize && f.service == Service::Xconnect { to: idx })
            })
            .map(|f| format!("the xconnect of `{}`", f.name))
            .collect();
        if !users.is_empty() {
            return Err(SwitchError::PortInUse {
                port: name.to_string(),
                users: users.join(", "),
            });
        }
        if let Service::Bridge { bd } = self.iface(idx).service {
            self.detach_member(bd, idx);
        }
        self.ip_forget_interface(idx);
        self.state.interfaces[idx as usize] = None;
        self.graph.clear_features(idx);
        let slot = self.state.ports[idx as usize]
            .take()
            .expect("resolved port index");
        Ok(slot.port)
    }

    /// Sets a port (its main interface) administratively up or down; the features that follow
    /// the change at once ([`crate::feature::Feature::admin_changed`]) are told.
    pub fn set_port_admin(&mut self, name: &str, up: bool) -> Result<(), SwitchError> {
        let idx = self.port_idx(name)?;
        if self.iface(idx).admin_up != up {
            self.iface_mut(idx).admin_up = up;
            for f in crate::feature::FEATURES {
                f.admin_changed(self, idx);
            }
        }
        Ok(())
    }

    /// `show ports`.
    pub fn show_ports(&self) -> Vec<PortInfo> {
        self.state
            .ports
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
            .map(|(i, p)| {
                let iface = self.state.interface(i as SwIfIdx);
                (
                    i,
                    p,
                    iface.is_some_and(|f| f.admin_up),
                    iface.map_or(Service::None, |f| f.service),
                )
            })
            .map(|(i, p, admin_up, service)| PortInfo {
                index: i as u16,
                name: p.name.clone(),
                admin_up,
                link: p.port.link(),
                service: self.service_info(service),
                stats: p.port.stats(),
                describe: p.port.describe(),
                rx_ring: p.port.rx_ring(),
                capture: p.capture.as_ref().map(|c| c.info()),
            })
            .collect()
    }

    /// Enables (or disables) feature node `feature` of feature arc `arc` on interface `iface`: the
    /// generic switch a feature's own control method calls (e.g. [`Switch::set_mtu_check`]).
    /// Then every feature's [`crate::feature::Feature::arc_changed`] is told (a feature with an
    /// inline egress may move its node onto or off the arc).
    pub fn set_interface_feature(
        &mut self,
        iface: &str,
        arc: ArcId,
        feature: &str,
        on: bool,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        self.graph
            .set_feature(arc, idx, feature, on)
            .map_err(|e| SwitchError::Feature {
                reason: e.to_string(),
            })?;
        for f in FEATURES {
            f.arc_changed(self, arc, idx)?;
        }
        Ok(())
    }

    /// `show interfaces`: every software interface with its kind, state, counters and the features
    /// enabled on its arcs.
    pub fn show_interfaces(&self) -> Vec<InterfaceInfo> {
        self.state
            .interfaces
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.as_ref().map(|f| (i as SwIfIdx, f)))
            .map(|(i, f)| InterfaceInfo {
                index: i,
                name: f.name.clone(),
                kind: f.kind.clone(),
                admin_up: f.admin_up,
                mac: f.mac.to_string(),
                mtu: f.mtu,
                counters: f.counters,
                input_features: names(self.graph.enabled_features(INPUT_ARC, i)),
                output_features: names(self.graph.enabled_features(OUTPUT_ARC, i)),
            })
            .collect()
    }

    // ----- capture -------------------------------------------------------------------------------

    /// Starts writing what `port` receives and is sent to a pcap file at `path` (created or
    /// truncated, a regular file only), at most `count` frames (`None`: until
    /// [`Switch::stop_capture`]). The file is opened on the calling thread and written by a
    /// writer thread spawned here ([`PortCapture::create`]); a switch driven by a worker thread
    /// should be given a capture started off it ([`Switch::start_capture`]), as the control plane
    /// does. A capture already running on the port is closed and replaced.
    pub fn capture(
        &mut self,
        port: &str,
        path: impl AsRef<Path>,
        count: Option<u64>,
    ) -> Result<(), SwitchError> {
        self.port_idx(port)?;
        check_count(count)?;
        let c = PortCapture::create(path.as_ref(), count).map_err(|e| SwitchError::Capture {
            port: port.to_string(),
            reason: e.to_string(),
        })?;
        self.start_capture(port, c)
    }

    /// Puts `capture` (its file open, its writer running elsewhere) beside `port`: from the next
    /// burst on, what the port receives and is sent is handed to its writer. Never opens or writes
    /// a file (see the `capture` module doc). A capture already running on the port is closed (its
    /// writer completes the file by itself) and replaced.
    pub fn start_capture(&mut self, port: &str, capture: PortCapture) -> Result<(), SwitchError> {
        let idx = self.port_idx(port)?;
        // Dropping the old one closes its queue; its writer flushes the file and ends.
        drop(self.slot_mut(idx).capture.replace(capture));
        Ok(())
    }

    /// Takes the capture off `port` (capturing stops at once) and hands it back, for the caller to
    /// [`PortCapture::finish`] off the worker.
    pub fn take_capture(&mut self, port: &str) -> Result<PortCapture, SwitchError> {
        let idx = self.port_idx(port)?;
        self.slot_mut(idx)
            .capture
            .take()
            .ok_or_else(|| SwitchError::NoCapture {
                port: port.to_string(),
            })
    }

    /// Stops the capture on `port`, waits (up to 10 s) for its writer to complete the file and
    /// says what was captured. It waits on the calling thread: a worker-driven switch should
    /// [`Switch::take_capture`] instead and finish the capture elsewhere, as the control plane does.
    pub fn stop_capture(&mut self, port: &str) -> Result<CaptureInfo, SwitchError> {
        let mut c = self.take_capture(port)?;
        let finished = c.finish(std::time::Duration::from_secs(10));
        let info = c.info();
        finished.map_err(|e| SwitchError::Capture {
            port: port.to_string(),
            reason: e.to_string(),
        })?;
        Ok(info)
    }

    // ----- counters, trace -----------------------------------------------------------------------

    /// Zeroes node, drop, event, loop and port counters.
    pub fn clear_counters(&mut self) {
        self.graph.clear_counters();
        self.state.aged_out = 0;
        for f in self.state.interfaces.iter_mut().flatten() {
            f.counters = Default::default();
        }
        self.stats = LoopStats::default();
        self.port_rx.fill(RxClock::default());
        self.rate_mark = (0, 0);
        self.last_poll_ns = 0;
        self.long_gaps.clear();
        self.pending_long_gap = None;
        for p in self.state.ports.iter_mut().flatten() {
            p.port.clear_stats();
        }
    }

    /// Traces the next `n` received packets.
    pub fn trace_add(&mut self, n: u32) {
        self.graph.trace_add(n);
    }

    /// Forgets the trace and disarms it.
    pub fn trace_clear(&mut self) {
        self.graph.trace_clear();
    }

    /// `show trace`.
    pub fn show_trace(&self) -> Vec<TraceStep> {
        self.graph.trace().to_vec()
    }

    /// `show runtime`.
    pub fn show_runtime(&self) -> RuntimeInfo {
        // The ports' receive first, as VPP lists its input nodes (`memif-input`): `NAME-rx`, one
        // per port that received, then the graph's nodes.
        let per_ns = self.graph.clock_hz() / 1e9;
        let rx = self
            .state
            .ports
            .iter()
            .zip(&self.port_rx)
            .filter_map(|(p, c)| Some((p.as_ref()?, c)))
            .filter(|(_, c)| c.calls > 0)
            .map(|(p, c)| {
                let per_call = c.packets as f64 / c.calls as f64;
                NodeRuntime {
                    name: format!("{}-rx", p.name),
                    calls: c.calls,
                    vectors: c.calls,
                    packets: c.packets,
                    drops: 0,
                    time_ns: c.time_ns,
                    clocks_per_packet: c.time_ns as f64 * per_ns / c.packets as f64,
                    vectors_per_call: per_call,
                    packets_per_vector: per_call,
                }
            });
        RuntimeInfo {
            nodes: rx.chain(self.graph.runtime()).collect(),
            loop_stats: self.stats,
            clock_hz: self.graph.clock_hz(),
            now_ns: self.now_ns(),
            long_gaps: self.long_gaps.iter().copied().collect(),
        }
    }

    /// `show errors`: the graph's non-zero drop and node counters (node by node, in graph order:
    /// e.g. `l2-learn` stations learned/moved/not learned, `l2-flood` copies without buffers), then
    /// `l2-age` entries aged out (aging runs in the poll loop, not in a node), then each port's
    /// non-zero backend counters ([`Port::error_counters`]: for AF_PACKET the kernel's ring-full
    /// drops and queue freezes, TX ring full, …) under the node name `port NAME`, so that frames
    /// lost before the graph saw them or after it sent them show here too, with the capture
    /// records a running capture's writer could not take (`capture-dropped`).
    pub fn show_errors(&self) -> Vec<ErrorCount> {
        let mut out = self.graph.errors();
        if self.state.aged_out > 0 {
            out.push(ErrorCount {
                node: "l2-age".to_string(),
                reason: "aged-out".to_string(),
                count: self.state.aged_out,
            });
        }
        for p in self.state.ports.iter().flatten() {
            // Capture records its writer could not take (never forwarded frames).
            let capture = p.capture.as_ref().map(|c| ("capture-dropped", c.dropped()));
            for (reason, count) in p.port.error_counters().into_iter().chain(capture) {
                if count > 0 {
                    out.push(ErrorCount {
                        node: format!("port {}", p.name),
                        reason: reason.to_string(),
                        count,
                    });
                }
            }
        }
        out
    }

    /// `show buffers`.
    pub fn show_buffers(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Adds to the worker's idle-sleep counter (called by the worker thread).
    pub(crate) fn note_idle_sleep(&mut self, asked: Duration) {
        self.stats.idle_sleeps += 1;
        self.note_sleep(asked);
    }

    /// Counts an idle sleep spent in `poll(2)` on the ports' descriptors (worker).
    pub(crate) fn note_idle_wait(&mut self, asked: Duration, woken: bool) {
        self.stats.idle_waits += 1;
        self.stats.idle_wakes += u64::from(woken);
        self.note_idle_sleep(asked);
    }

    /// The descriptors an idle worker can wait on for the next frame, one per port that has one
    /// ([`vecswitch_ports::RxWait::Fd`]), when no port must be polled; `None` when one must.
    pub fn rx_wait_fds(&self) -> Option<Vec<std::os::fd::BorrowedFd<'_>>> {
        let mut fds = Vec::new();
        for p in self.state.ports.iter().flatten() {
            match p.port.rx_wait() {
                vecswitch_ports::RxWait::Fd(fd) => fds.push(fd),
                vecswitch_ports::RxWait::Nothing => {}
                vecswitch_ports::RxWait::Poll => return None,
            }
        }
        Some(fds)
    }

    /// Adds to the worker's real-time break counter (called by the worker thread).
    pub(crate) fn note_rt_break(&mut self, asked: Duration) {
        self.stats.rt_breaks += 1;
        self.note_sleep(asked);
    }

    /// The worker chose to sleep up to `asked` before the next poll: that gap is not a stall, and
    /// at most `asked` of it is the sleep's.
    fn note_sleep(&mut self, asked: Duration) {
        self.gap_slept = true;
        self.gap_sleep_ns += asked.as_nanos() as u64;
    }

    /// Records how long the features' timers ran (`run_timers`).
    pub(crate) fn note_timers(&mut self, ns: u64) {
        self.stats.max_timers_ns = self.stats.max_timers_ns.max(ns);
        self.note_work(ns);
    }

    /// Records how long one control call ran on the worker.
    pub(crate) fn note_control_call(&mut self, ns: u64) {
        self.stats.max_control_call_ns = self.stats.max_control_call_ns.max(ns);
        self.note_work(ns);
    }

    /// One port's counters.
    pub fn port_stats(&self, name: &str) -> Result<PortStats, SwitchError> {
        let idx = self.port_idx(name)?;
        Ok(self.slot(idx).port.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 8: a worker kept from its ports (descheduled, or here: not polled for 20 ms) shows it
    /// in `show runtime` as the longest gap between polls; clearing the counters forgets it.
    #[test]
    fn the_longest_gap_between_polls_is_counted() {
        let mut sw = Switch::default();
        sw.poll_once();
        std::thread::sleep(Duration::from_millis(20));
        sw.poll_once();
        let gap = sw.show_runtime().loop_stats.max_poll_gap_ns;
        assert!(gap >= 20_000_000, "gap {gap} ns");
        sw.clear_counters();
        assert_eq!(sw.show_runtime().loop_stats.max_poll_gap_ns, 0);
        sw.poll_once();
        assert_eq!(sw.show_runtime().loop_stats.max_poll_gap_ns, 0);
    }

    /// A gap the switch did not choose is a stall, counted in the histogram and kept as a long gap
    /// with its cause (off CPU: here the test thread slept, which the switch did not ask for); a
    /// gap with a chosen sleep is not a stall. Every gap lands in exactly one bucket.
    #[test]
    fn gaps_are_histogrammed_and_long_ones_kept_with_their_cause() {
        let mut sw = Switch::default();
        sw.poll_once();
        std::thread::sleep(Duration::from_millis(3));
        sw.poll_once();
        for _ in 0..100 {
            sw.poll_once();
        }
        let r = sw.show_runtime();
        let l = r.loop_stats;
        assert_eq!(l.poll_gaps.iter().sum::<u64>(), l.polls - 1, "{l:?}");
        assert!(l.max_stall_ns >= 3_000_000, "{l:?}");
        assert_eq!(l.long_gaps, 1, "{l:?}");
        let g = r.long_gaps[0];
        assert!(g.gap_ns >= 3_000_000 && g.off_cpu_ns >= 2_500_000, "{g:?}");
        assert_eq!((g.slept_ns, g.ring_size), (0, 0), "{g:?}");
        assert!(g.at_ns <= r.now_ns);
        assert_eq!(l.poll_gaps[poll_gap_bucket(g.gap_ns)], 1, "{l:?}");

        // A chosen sleep: the gap is long but not a stall, and the sleep accounts for it.
        sw.clear_counters();
        sw.poll_once();
        sw.note_idle_sleep(Duration::from_millis(3));
        std::thread::sleep(Duration::from_millis(3));
        sw.poll_once();
        let r = sw.show_runtime();
        assert_eq!(r.loop_stats.max_stall_ns, 0, "{:?}", r.loop_stats);
        assert_eq!(r.long_gaps.len(), 1);
        assert!(r.long_gaps[0].slept_ns == 3_000_000, "{:?}", r.long_gaps[0]);
        assert!(r.long_gaps[0].off_cpu_ns < r.long_gaps[0].gap_ns);
    }

    #[test]
    fn poll_gap_buckets_are_powers_of_two_from_1024_ns() {
        assert_eq!(poll_gap_bucket(0), 0);
        assert_eq!(poll_gap_bucket(1023), 0);
        assert_eq!(poll_gap_bucket(1024), 1);
        assert_eq!(poll_gap_bucket(2047), 1);
        assert_eq!(poll_gap_bucket(2048), 2);
        assert_eq!(poll_gap_bucket(u64::MAX), POLL_GAP_BUCKETS - 1);
        for i in 1..POLL_GAP_BUCKETS {
            let floor = poll_gap_bucket_floor_ns(i);
            assert_eq!(poll_gap_bucket(floor), i);
            assert_eq!(poll_gap_bucket(floor - 1), i - 1);
        }
    }

    /// A memif port's configured `mac` is its main interface's MAC; without one the interface keeps
    /// the address made from its index (the chain's built-in tester sends to the configured MAC).
    #[test]
    fn a_memif_ports_configured_mac_is_its_interfaces_mac() {
        use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
        use vecswitch_wire::EthernetAddress;
        let dir = std::env::temp_dir();
        let sock = |n: &str| {
            dir.join(format!("vs-mac-{n}-{}.sock", std::process::id()))
                .display()
                .to_string()
        };
        let mut with = MemifConfig::new("m0", &sock("a"), 0, Role::Server);
        with.mac = Some([0x02, 0x00, 0x00, 0x00, 0x00, 0x42]);
        let without = MemifConfig::new("m1", &sock("b"), 0, Role::Server);
        let mut sw = Switch::default();
        sw.add_port("m0", Box::new(MemifPort::new(with).unwrap()))
            .unwrap();
        let i1 = sw
            .add_port("m1", Box::new(MemifPort::new(without).unwrap()))
            .unwrap();
        let mac = |name: &str| {
            let i = sw.state.interface_index(name).unwrap();
            sw.state.interfaces[i as usize].as_ref().unwrap().mac
        };
        assert_eq!(mac("m0"), EthernetAddress([0x02, 0, 0, 0, 0, 0x42]));
        let [hi, lo] = i1.to_be_bytes();
        assert_eq!(mac("m1"), EthernetAddress([0x02, 0xfe, 0, 0, hi, lo]));
        drop(sw);
        for n in ["a", "b"] {
            let _ = std::fs::remove_file(sock(n));
        }
    }

    /// A port that receives nothing and counts its `poll_control` calls.
    struct ControlCounter(std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl Port for ControlCounter {
        fn name(&self) -> &str {
            "cc"
        }
        fn rx_burst(&mut self, _: &mut Pool, _: &mut Vec<u32>, _: usize) -> usize {
            0
        }
        fn tx_burst(&mut self, _: &mut Pool, pkts: &[u32]) -> usize {
            pkts.len()
        }
        fn poll_control(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fn stats(&self) -> PortStats {
            PortStats::default()
        }
        fn clear_stats(&mut self) {}
        fn link(&self) -> LinkState {
            LinkState::Up
        }
    }

    /// Idle polls call the ports' `poll_control` (a system call per memif port) at most once per
    /// [`CONTROL_IDLE_INTERVAL_NS`], not on every poll, and again once that time has passed.
    #[test]
    fn idle_polls_run_port_control_at_most_once_per_interval() {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut sw = Switch::default();
        sw.add_port("cc", Box::new(ControlCounter(calls.clone())))
            .unwrap();
        let n = || calls.load(std::sync::atomic::Ordering::Relaxed);
        sw.poll_once();
        assert_eq!(n(), 1, "the first idle poll runs the control round");
        // 1,000 idle polls as fast as they go: at most one more round per interval elapsed.
        let t0 = std::time::Instant::now();
        for _ in 0..1000 {
            sw.poll_once();
        }
        let elapsed = t0.elapsed().as_nanos() as u64;
        let most = 1 + elapsed / CONTROL_IDLE_INTERVAL_NS + 1;
        assert!(
            n() <= most,
            "{} control rounds in {elapsed} ns (at most {most})",
            n()
        );
        let before = n();
        std::thread::sleep(Duration::from_nanos(2 * CONTROL_IDLE_INTERVAL_NS));
        sw.poll_once();
        assert_eq!(
            n(),
            before + 1,
            "an idle poll after the interval runs the control round"
        );
    }
}
