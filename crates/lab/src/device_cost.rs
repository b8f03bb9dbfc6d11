//! Device cost side by side: what each device spends per packet on its core at the same offered
//! load ([`DeviceCostRow`], one per device × frame size × load), and the Markdown table the
//! report shows ([`markdown`]).
//!
//! On a two-core box the generator is slower than the fastest devices, so their throughput
//! cannot be measured; their cost can. The testbed reads each device's busy time around a trial
//! (crates/testbed `devcost`: vecswitch's poll-loop busy clocks, testpmd's
//! `--record-core-cycles`, OVS's PMD processing cycles, a kernel device's system + softirq time
//! of its CPU), and this module only carries and prints the figures. The estimated capacity is
//! load ÷ busy fraction: an extrapolation that assumes the cost per packet stays constant up to
//! saturation, labelled as an estimate wherever it is shown.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One device at one offered load (medians over the repetitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCostRow {
    /// Driver name (`vecswitch-xconnect`, `testpmd-io`, `linux-bridge`, `ovs`).
    pub device: String,
    pub topology: String,
    /// Frame size label (`64`, `imix`).
    pub frame_size: String,
    /// The load the suite asked for, frames/s.
    pub intended_fps: f64,
    /// What the generator sent, frames/s.
    pub offered_fps: f64,
    /// What came back to the generator, frames/s.
    pub received_fps: f64,
    /// What the device counted as received, frames/s (its own counters), if it has counters.
    pub device_rx_fps: Option<f64>,
    /// Busy time ÷ trial time of the device's forwarding core (0..1; above 1 when it was busy
    /// on more than one core or counted time it was preempted).
    pub busy_fraction: Option<f64>,
    /// Busy CPU clocks per packet the device received.
    pub cycles_per_packet: Option<f64>,
    /// ESTIMATE: device receive rate ÷ busy fraction — the load at which it would be busy all
    /// the time if its cost per packet stayed the same. `None` when the device was (nearly)
    /// saturated or had no busy time.
    pub estimated_capacity_fps: Option<f64>,
    /// Idle polls ÷ polls of a poll-mode device that counts them.
    pub idle_poll_fraction: Option<f64>,
    /// Where the busy time came from.
    pub method: String,
    /// Trials measured (the figures are their medians).
    pub repetitions: u32,
    /// At least one trial was tester-limited (the generator did not offer the load).
    pub tester_limited: bool,
    /// Anything that qualifies the figures (CPU shared with other work, saturated device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The round (1-based) of a suite that measures each device several times, each on a
    /// freshly started device (`Suite::blocks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// How the load was chosen when the suite chose it per cell ([`cell_load`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_basis: Option<String>,
}

impl DeviceCostRow {
    /// The idle share of the device's core (1 − busy fraction), when its busy time is known.
    pub fn idle_fraction(&self) -> Option<f64> {
        self.busy_fraction.map(|b| (1.0 - b).max(0.0))
    }

    /// One line for the bench's progress output: device, cell, cost per packet, idle share and
    /// the (labelled) estimate.
    pub fn summary(&self) -> String {
        format!(
            "{} {} {} at {:.0} fps: received {:.0} fps{}, {} cycles/packet, core {} busy / {} \
             idle{}, est. capacity {} (estimate); {}",
            self.device,
            self.topology,
            self.frame_size,
            self.intended_fps,
            self.received_fps,
            if self.tester_limited {
                " (tester-limited)"
            } else {
                ""
            },
            opt(self.cycles_per_packet, |v| format!("{v:.0}")),
            opt(self.busy_fraction, |v| format!("{:.1} %", v * 100.0)),
            opt(self.idle_fraction(), |v| format!("{:.1} %", v * 100.0)),
            self.idle_poll_fraction
                .map(|v| format!(", {:.1} % idle polls", v * 100.0))
                .unwrap_or_default(),
            opt(self.estimated_capacity_fps, |v| format!("≈ {v:.0} fps")),
            self.method
        )
    }
}

/// Busy fraction above which no capacity is extrapolated: the device is at its limit.
pub const SATURATED_BUSY_FRACTION: f64 = 0.95;

/// The estimated capacity for a receive rate and busy fraction (see [`DeviceCostRow`]).
pub fn estimate_capacity(rx_fps: f64, busy_fraction: f64) -> Option<f64> {
    (busy_fraction > 0.0 && busy_fraction < SATURATED_BUSY_FRACTION && rx_fps > 0.0)
        .then(|| rx_fps / busy_fraction)
}

/// The median of `v` (`None` when empty); NaNs are ignored.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// The largest value of the 1-2-5 series (1, 2, 5, 10, 20, 50 … × 10^k) not above `x`; `None`
/// for a non-positive or non-finite `x`.
pub fn round_down_125(x: f64) -> Option<f64> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let decade = 10f64.powf(x.log10().floor());
    // Guard the decade against log10's rounding (x = 1000 must give 1000, not 500).
    let decade = if decade * 10.0 <= x {
        decade * 10.0
    } else {
        decade
    };
    [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|v| *v <= x * (1.0 + 1e-12))
        .or(Some(decade / 2.0))
}

/// The device-cost load of one cell ([`crate::suite::DeviceCostSpec::load_percent`]):
/// `percent` of the lower of the generator's calibrated limit and the cell's throughput (its
/// NDR), rounded down to the 1-2-5 series, with the sentence that says so.
///
/// The device is then busy enough that its cost per packet means something (at a fixed low
/// load a poll-mode device is 97–99 % idle and cycles per packet divide a small busy time by few
/// packets), and below its loss region and the tester's ceiling. The rounding makes two runs
/// whose throughputs differ by less than a step choose the same load, so that their costs can
/// be compared (`vecswitch report agree` compares cost only at equal loads). `None` without a
/// throughput or limit to start from.
pub fn cell_load(
    percent: f64,
    generator_limit_fps: Option<f64>,
    throughput_fps: Option<f64>,
) -> Option<(f64, String)> {
    let valid = |v: Option<f64>| v.filter(|x| x.is_finite() && *x > 0.0);
    let (limit, thr) = (valid(generator_limit_fps), valid(throughput_fps));
    let base = match (limit, thr) {
        (Some(l), Some(t)) => l.min(t),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return None,
    };
    let load = round_down_125(base * percent / 100.0)?;
    let part = |name: &str, v: Option<f64>| v.map(|x| format!("{name} {:.0} fps", x));
    let of: Vec<String> = [
        part("generator limit", limit),
        part("throughput (NDR)", thr),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some((
        load,
        format!(
            "{percent} % of min({}) = {:.0} fps, rounded down to the 1-2-5 series",
            of.join(", "),
            base * percent / 100.0
        ),
    ))
}

/// The device-cost load of a **group** — the devices of one topology and frame size — from
/// the group's lowest NDR: `percent` of the lower of the generator's calibrated limit and the
/// lowest of the `ndrs` found so far (device, NDR), rounded down to the 1-2-5 series as in
/// [`cell_load`], with the sentence that says so. `members` is how many devices the group has:
/// when fewer NDRs than that are known the sentence says the load is the lowest *so far*.
///
/// Every device of the group is then measured at the same intended load (whatever its own NDR),
/// so that the report's "Device cost at equal offered loads" compares like with like; the load
/// is below every device's NDR, so none of them is measured in its loss region. `None` without
/// an NDR or a limit to start from.
pub fn group_load(
    percent: f64,
    generator_limit_fps: Option<f64>,
    ndrs: &[(String, f64)],
    members: usize,
) -> Option<(f64, String)> {
    let valid = |x: f64| x.is_finite() && x > 0.0;
    let limit = generator_limit_fps.filter(|x| valid(*x));
    let lowest = ndrs
        .iter()
        .filter(|(_, x)| valid(*x))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let base = match (limit, lowest.map(|(_, t)| *t)) {
        (Some(l), Some(t)) => l.min(t),
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => return None,
    };
    let load = round_down_125(base * percent / 100.0)?;
    let known = ndrs.iter().filter(|(_, x)| valid(*x)).count();
    let of: Vec<String> = [
        limit.map(|l| format!("generator limit {l:.0} fps")),
        lowest.map(|(d, t)| {
            let which = if known >= members {
                format!("the group's lowest NDR {t:.0} fps ({d}, of {known} devices)")
            } else {
                format!(
                    "the lowest NDR so far {t:.0} fps ({d}, {known} of {members} devices measured)"
                )
            };
            if members <= 1 {
                format!("throughput (NDR) {t:.0} fps")
            } else {
                which
            }
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some((
        load,
        format!(
            "{percent} % of min({}) = {:.0} fps, rounded down to the 1-2-5 series",
            of.join(", "),
            base * percent / 100.0
        ),
    ))
}

/// A device-cost load chosen for a group ([`GroupLoads::load`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupLoad {
    /// The intended load, frames/s.
    pub fps: f64,
    /// How it was chosen ([`group_load`]'s sentence), for the rows' `load_basis`.
    pub basis: String,
    /// Every device of the group had an NDR when it was chosen: the load is fixed for the
    /// group's later rounds. `false`: chosen from the NDRs known so far (a device measured
    /// before the others of its group), and it may differ from the group's final load.
    pub settled: bool,
}

/// The bench's memory of the device-cost loads of a suite with `[device_cost] load_percent`, per
/// group (topology × frame size, the devices [`Suite::blocks`] runs there).
///
/// The bench measures a device's cost on the running device right after its tests, device by
/// device, so the first devices of a group are costed before the others' NDRs exist. The load
/// of a block is therefore `load_percent` of the lowest NDR **known so far** in its group
/// ([`group_load`]); once every device of the group has an NDR (in the first round, at the
/// group's last device) the load is settled and kept for every later block of the group. In a
/// suite of several rounds every device is costed at the settled load from the second round
/// on; a first-round row at an earlier, different load is reported under "other loads".
///
/// [`Suite::blocks`]: crate::suite::Suite::blocks
#[derive(Debug, Clone, Default)]
pub struct GroupLoads {
    percent: Option<f64>,
    /// (topology, size) → the suite's `[[dut]]` indices that run there, and their names.
    members: std::collections::BTreeMap<(String, crate::suite::FrameSize), Vec<(usize, String)>>,
    /// (topology, size) → the first NDR found per `[[dut]]` index.
    ndrs: std::collections::BTreeMap<(String, crate::suite::FrameSize), Vec<(usize, f64)>>,
    settled: std::collections::BTreeMap<(String, crate::suite::FrameSize), GroupLoad>,
}

impl GroupLoads {
    /// The groups of `suite` (none to choose without `[device_cost] load_percent`).
    pub fn new(suite: &crate::suite::Suite) -> GroupLoads {
        let mut g = GroupLoads {
            percent: suite.device_cost.as_ref().and_then(|d| d.load_percent),
            ..GroupLoads::default()
        };
        for (_, i, size) in suite.blocks() {
            let d = &suite.duts[i];
            let m = g.members.entry((d.topology.clone(), size)).or_default();
            if !m.iter().any(|(j, _)| *j == i) {
                m.push((i, d.name.clone()));
            }
        }
        g
    }

    fn key(
        &self,
        dut: usize,
        size: &crate::suite::FrameSize,
    ) -> Option<(String, crate::suite::FrameSize)> {
        self.members
            .iter()
            .find(|((_, s), m)| s == size && m.iter().any(|(j, _)| *j == dut))
            .map(|(k, _)| k.clone())
    }

    /// Notes `[[dut]]` `dut`'s throughput (NDR) at `size`; only its first is kept (the load
    /// does not move with later rounds' NDRs).
    pub fn note_throughput(
        &mut self,
        dut: usize,
        size: &crate::suite::FrameSize,
        ndr: Option<f64>,
    ) {
        let (Some(k), Some(x)) = (
            self.key(dut, size),
            ndr.filter(|x| x.is_finite() && *x > 0.0),
        ) else {
            return;
        };
        let v = self.ndrs.entry(k).or_default();
        if !v.iter().any(|(j, _)| *j == dut) {
            v.push((dut, x));
        }
    }

    /// The load at which to cost `[[dut]]` `dut` at `size` ([`GroupLoads`]); `None` without
    /// `load_percent`, or without an NDR or a generator limit to start from.
    pub fn load(
        &mut self,
        dut: usize,
        size: &crate::suite::FrameSize,
        generator_limit_fps: Option<f64>,
    ) -> Option<GroupLoad> {
        let percent = self.percent?;
        let k = self.key(dut, size)?;
        if let Some(l) = self.settled.get(&k) {
            return Some(l.clone());
        }
        let members = &self.members[&k];
        let ndrs: Vec<(String, f64)> = self
            .ndrs
            .get(&k)
            .map(|v| {
                v.iter()
                    .filter_map(|(j, x)| {
                        members
                            .iter()
                            .find(|(m, _)| m == j)
                            .map(|(_, n)| (n.clone(), *x))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let (fps, basis) = group_load(percent, generator_limit_fps, &ndrs, members.len())?;
        let settled = ndrs.len() >= members.len();
        let l = GroupLoad {
            fps,
            basis,
            settled,
        };
        if settled {
            self.settled.insert(k, l.clone());
        }
        Some(l)
    }
}

/// Splits cost rows into those at a load **common to their group** and the others, each in the
/// rows' order. A group is the devices with rows of one topology and frame size; a load is
/// common when every device of the group has a row at it (in any round). A group of one device
/// has only common loads. The report shows the first under "Device cost at equal offered
/// loads", the others apart under "Device cost at other loads" (not comparable across devices).
pub fn split_by_common_load(rows: &[DeviceCostRow]) -> (Vec<DeviceCostRow>, Vec<DeviceCostRow>) {
    let same_group = |a: &DeviceCostRow, b: &DeviceCostRow| {
        a.topology == b.topology && size_key(&a.frame_size) == size_key(&b.frame_size)
    };
    let same_load = |a: f64, b: f64| (a - b).abs() <= a.abs().max(b.abs()) * 1e-9;
    rows.iter().cloned().partition(|r| {
        let group: Vec<&DeviceCostRow> = rows.iter().filter(|x| same_group(r, x)).collect();
        group.iter().all(|d| {
            group
                .iter()
                .any(|x| x.device == d.device && same_load(x.intended_fps, r.intended_fps))
        })
    })
}

/// The cost rows of one device, topology, frame size and load merged over rounds and
/// repetitions ([`merge_rows`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MergedCost {
    pub device: String,
    pub topology: String,
    /// As the rows spell it (`64 B`, `64`, `imix`).
    pub frame_size: String,
    pub intended_fps: f64,
    /// Median of the rows' cycles per packet (rows without one left out).
    pub cycles_per_packet: Option<f64>,
    /// [min, max] of the rows' cycles per packet, when more than one row had one.
    pub range: Option<(f64, f64)>,
    /// Median busy fraction of the rows that have one.
    pub busy_fraction: Option<f64>,
    /// Rows merged (rounds × one row per round).
    pub rows: usize,
    /// Any row was tester-limited.
    pub tester_limited: bool,
    pub load_basis: Option<String>,
}

impl MergedCost {
    pub fn idle_fraction(&self) -> Option<f64> {
        self.busy_fraction.map(|b| (1.0 - b).max(0.0))
    }
}

/// A frame size label without spaces, so `64 B`, `64B` and `64` compare equal.
pub fn size_key(label: &str) -> String {
    let l = label.trim();
    match l.trim_end_matches('B').trim().parse::<u32>() {
        Ok(n) => format!("{n}B"),
        Err(_) => l.to_string(),
    }
}

/// Merges the rows of the same device, topology, frame size and load (the rounds of a suite
/// that measures each device several times) into medians with a [min, max] range, in the
/// order each cell first appears.
pub fn merge_rows(rows: &[DeviceCostRow]) -> Vec<MergedCost> {
    let same = |a: &DeviceCostRow, b: &DeviceCostRow| {
        a.device == b.device
            && a.topology == b.topology
            && size_key(&a.frame_size) == size_key(&b.frame_size)
            && (a.intended_fps - b.intended_fps).abs() <= a.intended_fps.abs() * 1e-9
    };
    let mut out: Vec<MergedCost> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if rows[..i].iter().any(|p| same(p, r)) {
            continue;
        }
        let group: Vec<&DeviceCostRow> = rows[i..].iter().filter(|x| same(r, x)).collect();
        let cpp: Vec<f64> = group.iter().filter_map(|x| x.cycles_per_packet).collect();
        let busy: Vec<f64> = group.iter().filter_map(|x| x.busy_fraction).collect();
        out.push(MergedCost {
            device: r.device.clone(),
            topology: r.topology.clone(),
            frame_size: r.frame_size.clone(),
            intended_fps: r.intended_fps,
            cycles_per_packet: median(&cpp),
            range: (cpp.len() > 1).then(|| {
                (
                    cpp.iter().copied().fold(f64::INFINITY, f64::min),
                    cpp.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                )
            }),
            busy_fraction: median(&busy),
            rows: group.len(),
            tester_limited: group.iter().any(|x| x.tester_limited),
            load_basis: group.iter().find_map(|x| x.load_basis.clone()),
        });
    }
    out
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "—".into())
}

/// Heading of the table of costs at loads common to every device of their group.
pub const EQUAL_LOADS_TITLE: &str = "Device cost at equal offered loads";
/// Heading of the table of costs at loads not common to their group.
pub const OTHER_LOADS_TITLE: &str = "Device cost at other loads";

/// What the equal-loads table holds and how its loads were chosen.
const EQUAL_LOADS_NOTE: &str = "Every device of a topology and frame size at the same intended load (load fps): only loads at which every device of the group was measured: the suite's fixed loads_fps, or load_percent of the lower of the generator's limit and the group's lowest NDR (each row's note says how its load was chosen; docs/METHODOLOGY.md, Device cost at a load where it means something). A topology and frame size with a single device shows its loads here.";

/// What the other-loads table holds.
const OTHER_LOADS_NOTE: &str = "Loads at which not every device of its topology and frame size was measured — a device costed before its group's other NDRs were known (a suite's first round), or a run whose devices chose their loads from their own NDRs: these costs are not comparable across devices; compare a device with itself in another run (vecswitch report agree, at equal loads only).";

/// The "Device cost" sections of the Markdown report (empty when there are no rows): the rows
/// at loads common to their group ([`split_by_common_load`]) under [`EQUAL_LOADS_TITLE`], the
/// others apart under [`OTHER_LOADS_TITLE`].
pub fn markdown(rows: &[DeviceCostRow]) -> String {
    let (equal, other) = split_by_common_load(rows);
    let mut s = String::new();
    for (title, note, rows) in [
        (EQUAL_LOADS_TITLE, EQUAL_LOADS_NOTE, &equal),
        (OTHER_LOADS_TITLE, OTHER_LOADS_NOTE, &other),
    ] {
        if !rows.is_empty() {
            markdown_section(&mut s, title, note, rows);
        }
    }
    s
}

/// `rows` grouped for reading: by topology and frame size (in the order they first appear),
/// then load, device (first appearance) and round.
fn ordered(rows: &[DeviceCostRow]) -> Vec<DeviceCostRow> {
    let first = |f: &dyn Fn(&DeviceCostRow) -> bool| rows.iter().position(f).unwrap_or(0);
    let mut v: Vec<(usize, usize, f64, usize, u32, DeviceCostRow)> = rows
        .iter()
        .map(|r| {
            (
                first(&|x| x.topology == r.topology),
                first(&|x| {
                    x.topology == r.topology && size_key(&x.frame_size) == size_key(&r.frame_size)
                }),
                r.intended_fps,
                first(&|x| x.device == r.device),
                r.round.unwrap_or(0),
                r.clone(),
            )
        })
        .collect();
    v.sort_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then(a.2.total_cmp(&b.2))
            .then((a.3, a.4).cmp(&(b.3, b.4)))
    });
    v.into_iter().map(|x| x.5).collect()
}

fn markdown_section(s: &mut String, title: &str, note: &str, rows: &[DeviceCostRow]) {
    let rows = &ordered(rows);
    let _ = writeln!(s, "## {title}\n\n{note}\n");
    let _ = writeln!(
        s,
        "| device | topology | frame | load fps | offered fps | received fps | device rx fps | busy | cycles/packet | est. capacity fps (estimate) | idle polls | method | round |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(13));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {:.0}{} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            r.device,
            r.topology,
            r.frame_size,
            r.intended_fps,
            r.offered_fps,
            if r.tester_limited {
                " (tester-limited)"
            } else {
                ""
            },
            r.received_fps,
            opt(r.device_rx_fps, |v| format!("{v:.0}")),
            opt(r.busy_fraction, |v| format!("{:.1} %", v * 100.0)),
            opt(r.cycles_per_packet, |v| format!("{v:.0}")),
            opt(r.estimated_capacity_fps, |v| format!("≈ {v:.0}")),
            opt(r.idle_poll_fraction, |v| format!("{:.1} %", v * 100.0)),
            r.method,
            r.round.map_or_else(|| "—".to_string(), |n| n.to_string()),
        );
    }
    let notes: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            r.note
                .as_ref()
                .map(|n| format!("- {} at {:.0} fps: {n}", r.device, r.intended_fps))
        })
        .collect();
    let _ = writeln!(
        s,
        "\nMedians of {} trial(s) per row. Estimated capacity = device receive rate ÷ busy fraction: an extrapolation that assumes a constant cost per packet, not a measurement; none is given above {:.0} % busy.",
        rows.iter().map(|r| r.repetitions).max().unwrap_or(0),
        SATURATED_BUSY_FRACTION * 100.0
    );
    for n in notes {
        let _ = writeln!(s, "{n}");
    }
    // How each chosen load was chosen (once per cell and load, not per round).
    let mut said: Vec<(String, String, String, u64)> = Vec::new();
    for r in rows {
        let Some(b) = &r.load_basis else { continue };
        let k = (
            r.device.clone(),
            r.topology.clone(),
            size_key(&r.frame_size),
            r.intended_fps.to_bits(),
        );
        if !said.contains(&k) {
            let _ = writeln!(
                s,
                "- {} {} {}: load {:.0} fps = {b}",
                r.device, r.topology, r.frame_size, r.intended_fps
            );
            said.push(k);
        }
    }
    s.push('\n');
}

/// The same sections as HTML for the self-contained report (empty when there are no rows).
pub fn html(rows: &[DeviceCostRow]) -> String {
    let (equal, other) = split_by_common_load(rows);
    let mut s = String::new();
    for (title, note, rows) in [
        (EQUAL_LOADS_TITLE, EQUAL_LOADS_NOTE, &equal),
        (OTHER_LOADS_TITLE, OTHER_LOADS_NOTE, &other),
    ] {
        if !rows.is_empty() {
            html_section(&mut s, title, note, rows);
        }
    }
    s
}

fn html_section(s: &mut String, title: &str, note: &str, rows: &[DeviceCostRow]) {
    use crate::report::svg::esc;
    let rows = &ordered(rows);
    let _ = write!(
        s,
        "<h2>{}</h2><p class=note>{} Busy time of each device's forwarding core per packet (medians of the repetitions; how each device's busy time is read: docs/TESTBED.md, Device cost). Estimated capacity = device receive rate ÷ busy fraction: an extrapolation assuming a constant cost per packet, not a measurement; none above {:.0} % busy.</p><div class=scroll><table><tr>",
        esc(title),
        esc(note),
        SATURATED_BUSY_FRACTION * 100.0
    );
    for h in [
        "device",
        "topology",
        "frame",
        "load fps",
        "offered fps",
        "received fps",
        "device rx fps",
        "busy",
        "cycles/packet",
        "est. capacity fps (estimate)",
        "idle polls",
        "method",
        "note",
        "round",
    ] {
        let _ = write!(s, "<th class=t>{}</th>", esc(h));
    }
    s.push_str("</tr>");
    for r in rows {
        let cells = [
            r.device.clone(),
            r.topology.clone(),
            r.frame_size.clone(),
            format!("{:.0}", r.intended_fps),
            format!(
                "{:.0}{}",
                r.offered_fps,
                if r.tester_limited {
                    " (tester-limited)"
                } else {
                    ""
                }
            ),
            format!("{:.0}", r.received_fps),
            opt(r.device_rx_fps, |v| format!("{v:.0}")),
            opt(r.busy_fraction, |v| format!("{:.1} %", v * 100.0)),
            opt(r.cycles_per_packet, |v| format!("{v:.0}")),
            opt(r.estimated_capacity_fps, |v| format!("≈ {v:.0}")),
            opt(r.idle_poll_fraction, |v| format!("{:.1} %", v * 100.0)),
            r.method.clone(),
            [r.note.clone(), r.load_basis.clone()]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; "),
            r.round.map_or_else(|| "—".to_string(), |n| n.to_string()),
        ];
        s.push_str("<tr>");
        for c in cells {
            let _ = write!(s, "<td class=t>{}</td>", esc(&c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> DeviceCostRow {
        DeviceCostRow {
            device: "vecswitch-xconnect".into(),
            topology: "phy2phy-memif".into(),
            frame_size: "64".into(),
            intended_fps: 100_000.0,
            offered_fps: 99_990.0,
            received_fps: 99_990.0,
            device_rx_fps: Some(99_990.0),
            busy_fraction: Some(0.25),
            cycles_per_packet: Some(6500.0),
            estimated_capacity_fps: estimate_capacity(99_990.0, 0.25),
            idle_poll_fraction: Some(0.5),
            method: "its own busy clocks".into(),
            repetitions: 3,
            tester_limited: false,
            note: Some("CPU 1 shared".into()),
            round: None,
            load_basis: None,
        }
    }

    #[test]
    fn capacity_is_an_estimate_only_below_saturation() {
        assert_eq!(estimate_capacity(100.0, 0.25), Some(400.0));
        assert_eq!(estimate_capacity(100.0, 0.97), None);
        assert_eq!(estimate_capacity(100.0, 0.0), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn summary_line_carries_cost_idle_and_the_labelled_estimate() {
        let l = row().summary();
        assert_eq!(
            l,
            "vecswitch-xconnect phy2phy-memif 64 at 100000 fps: received 99990 fps, 6500 \
             cycles/packet, core 25.0 % busy / 75.0 % idle, 50.0 % idle polls, est. capacity \
             ≈ 399960 fps (estimate); its own busy clocks"
        );
        let mut r = row();
        (r.busy_fraction, r.cycles_per_packet, r.idle_poll_fraction) = (None, None, None);
        r.estimated_capacity_fps = None;
        r.tester_limited = true;
        let l = r.summary();
        assert!(
            l.contains("(tester-limited), — cycles/packet, core — busy / — idle, est. capacity —"),
            "{l}"
        );
    }

    #[test]
    fn the_cell_load_is_a_share_of_the_lower_of_limit_and_throughput_on_a_1_2_5_grid() {
        assert_eq!(round_down_125(1.0), Some(1.0));
        assert_eq!(round_down_125(1000.0), Some(1000.0));
        assert_eq!(round_down_125(999.0), Some(500.0));
        assert_eq!(round_down_125(470_000.0), Some(200_000.0));
        assert_eq!(round_down_125(2_874_000.0), Some(2_000_000.0));
        assert_eq!(round_down_125(0.3), Some(0.2));
        assert_eq!(round_down_125(0.0), None);
        assert_eq!(round_down_125(f64::NAN), None);
        // testpmd over memif at 64 B in the two runs of 2026-11-24 02:55 (BENCHMARKS §4): NDR
        // 0.935 and 5.748 Mfps, generator limits 7.36 and 6.70 Mfps: 50 % gives 0.47 and 3.35
        // Mfps → 200 and 2000 kfps. Two loads, honestly different: the modes differ.
        let (a, why) = cell_load(50.0, Some(7_356_139.0), Some(935_000.0)).unwrap();
        assert_eq!(a, 200_000.0);
        assert_eq!(
            why,
            "50 % of min(generator limit 7356139 fps, throughput (NDR) 935000 fps) = 467500 fps, \
             rounded down to the 1-2-5 series"
        );
        assert_eq!(
            cell_load(50.0, Some(6_697_178.0), Some(5_748_000.0))
                .unwrap()
                .0,
            2_000_000.0
        );
        // Tester-limited veth cells at 64 B, the same two runs: the Linux bridge's NDR 0.654 and
        // 0.642 Mfps give one load (200 kfps), OVS's 0.221 and 0.216 another (100 kfps): their
        // costs compare. vecswitch's 0.158 and 0.232 straddle a step (50 and 100 kfps): not.
        assert_eq!(
            cell_load(50.0, Some(892_807.0), Some(654_000.0)).unwrap().0,
            200_000.0
        );
        assert_eq!(
            cell_load(50.0, Some(1_181_357.0), Some(642_000.0))
                .unwrap()
                .0,
            200_000.0
        );
        assert_eq!(
            cell_load(50.0, Some(892_807.0), Some(221_000.0)).unwrap().0,
            100_000.0
        );
        assert_eq!(
            cell_load(50.0, Some(1_181_357.0), Some(216_000.0))
                .unwrap()
                .0,
            100_000.0
        );
        assert_eq!(
            cell_load(50.0, Some(892_807.0), Some(158_000.0)).unwrap().0,
            50_000.0
        );
        assert_eq!(
            cell_load(50.0, Some(1_181_357.0), Some(232_000.0))
                .unwrap()
                .0,
            100_000.0
        );
        // The limit alone when no throughput was found, none without either.
        assert_eq!(cell_load(50.0, Some(1e6), None).unwrap().0, 500_000.0);
        assert_eq!(cell_load(50.0, None, None), None);
        assert_eq!(cell_load(50.0, Some(0.0), Some(f64::NAN)), None);
    }

    #[test]
    fn rounds_merge_into_a_median_and_a_range_per_load() {
        let at = |load: f64, cpp: f64, round: u32| DeviceCostRow {
            intended_fps: load,
            cycles_per_packet: Some(cpp),
            busy_fraction: Some(load * cpp / 2.6e9),
            round: Some(round),
            load_basis: Some("50 % of …".into()),
            note: None,
            ..row()
        };
        let mut other = at(100_000.0, 900.0, 1);
        other.frame_size = "64 B".into();
        other.device = "testpmd-io".into();
        let rows = vec![
            at(100_000.0, 600.0, 1),
            other,
            at(100_000.0, 660.0, 2),
            at(100_000.0, 540.0, 3),
            at(20_000.0, 1500.0, 1),
        ];
        let m = merge_rows(&rows);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].rows, m[0].cycles_per_packet), (3, Some(600.0)));
        assert_eq!(m[0].range, Some((540.0, 660.0)));
        assert_eq!(m[0].load_basis.as_deref(), Some("50 % of …"));
        assert_eq!(
            (m[1].device.as_str(), m[1].rows, m[1].range),
            ("testpmd-io", 1, None)
        );
        assert_eq!((m[2].intended_fps, m[2].rows), (20_000.0, 1));
        assert_eq!(size_key("64 B"), "64B");
        assert_eq!(size_key("64"), "64B");
        assert_eq!(size_key("imix"), "imix");
        let md = markdown(&rows);
        assert!(md.contains("| its own busy clocks | 3 |"), "{md}");
        assert_eq!(md.matches("load 100000 fps = 50 % of …").count(), 2, "{md}");
    }

    #[test]
    fn markdown_table_labels_the_estimate() {
        assert_eq!(markdown(&[]), "");
        let md = markdown(&[row()]);
        assert!(md.contains("## Device cost"), "{md}");
        assert!(md.contains("| vecswitch-xconnect | phy2phy-memif | 64 | 100000 | 99990 | 99990 | 99990 | 25.0 % | 6500 | ≈ 399960 | 50.0 % | its own busy clocks | — |"), "{md}");
        assert!(
            md.contains("(estimate)") && md.contains("extrapolation"),
            "{md}"
        );
        assert!(md.contains("CPU 1 shared"), "{md}");
        let h = html(&[row()]);
        assert!(
            h.contains("<h2>Device cost") && h.contains("≈ 399960") && h.contains("(estimate)"),
            "{h}"
        );
        assert_eq!(html(&[]), "");
        let back: DeviceCostRow =
            serde_json::from_str(&serde_json::to_string(&row()).unwrap()).unwrap();
        assert_eq!(back, row());
    }

    fn suite(duts: &[(&str, &str)], rounds: u32) -> crate::suite::Suite {
        let mut t = String::from("name = \"t\"\nframe_sizes = [64, 1518]\n");
        for (n, topo) in duts {
            t.push_str(&format!("[[dut]]\nname = \"{n}\"\ntopology = \"{topo}\"\n"));
        }
        t.push_str(&format!(
            "[[test]]\nprocedure = \"mlrsearch\"\nsearches = {rounds}\n[device_cost]\nload_percent = 50\n"
        ));
        crate::suite::Suite::parse(&t).unwrap()
    }

    #[test]
    fn a_group_of_two_devices_of_different_ndr_gets_one_load_from_the_lowest() {
        use crate::suite::FrameSize;
        // `make demo`'s memif pair: vecswitch's NDR 1.0 Mfps, testpmd's 5.7 Mfps, generator
        // 7.4 Mfps. Each at 50 % of its own NDR gave 500 and 2000 kfps under "equal loads".
        let s = suite(
            &[
                ("vecswitch-xconnect", "phy2phy-memif"),
                ("testpmd-io", "phy2phy-memif"),
                ("ovs", "phy2phy-veth"),
            ],
            3,
        );
        let (b64, limit) = (FrameSize::Bytes(64), Some(7_356_139.0));
        let mut g = GroupLoads::new(&s);
        // The bench's order: round 1 device by device (A's cost before B's NDR exists).
        g.note_throughput(0, &b64, Some(1_000_000.0));
        let a1 = g.load(0, &b64, limit).unwrap();
        assert_eq!((a1.fps, a1.settled), (500_000.0, false));
        assert!(
            a1.basis.contains(
                "lowest NDR so far 1000000 fps (vecswitch-xconnect, 1 of 2 devices measured)"
            ),
            "{}",
            a1.basis
        );
        g.note_throughput(1, &b64, Some(5_748_000.0));
        let b1 = g.load(1, &b64, limit).unwrap();
        assert_eq!((b1.fps, b1.settled), (500_000.0, true));
        assert_eq!(
            b1.basis,
            "50 % of min(generator limit 7356139 fps, the group's lowest NDR 1000000 fps \
             (vecswitch-xconnect, of 2 devices)) = 500000 fps, rounded down to the 1-2-5 series"
        );
        // Later rounds keep the settled load whatever their NDRs.
        g.note_throughput(0, &b64, Some(300_000.0));
        for dut in [0, 1] {
            assert_eq!(g.load(dut, &b64, limit), Some(b1.clone()));
        }
        // The lower NDR second: the first device's provisional load was too high; the settled
        // one is the group's, the same for both from then on.
        let mut g = GroupLoads::new(&s);
        g.note_throughput(1, &b64, Some(5_748_000.0));
        assert_eq!(g.load(1, &b64, limit).unwrap().fps, 2_000_000.0);
        g.note_throughput(0, &b64, Some(1_000_000.0));
        let a = g.load(0, &b64, limit).unwrap();
        assert_eq!((a.fps, a.settled), (500_000.0, true));
        assert_eq!(g.load(1, &b64, limit).unwrap().fps, 500_000.0);
        // Another topology or size is another group; a group of one settles at once.
        g.note_throughput(2, &b64, Some(221_000.0));
        let o = g.load(2, &b64, Some(892_807.0)).unwrap();
        assert_eq!((o.fps, o.settled), (100_000.0, true));
        assert!(
            o.basis.contains("throughput (NDR) 221000 fps"),
            "{}",
            o.basis
        );
        assert_eq!(
            g.load(0, &FrameSize::Bytes(1518), limit).unwrap().fps,
            2_000_000.0
        );
        // Without load_percent there is nothing to choose.
        let mut none = GroupLoads::new(&crate::suite::Suite {
            device_cost: None,
            ..s.clone()
        });
        none.note_throughput(0, &b64, Some(1e6));
        assert_eq!(none.load(0, &b64, limit), None);
        assert_eq!(group_load(50.0, None, &[], 2), None);
    }

    #[test]
    fn a_row_at_a_load_not_common_to_its_group_is_shown_apart() {
        let at = |dev: &str, load: f64, round: u32| DeviceCostRow {
            device: dev.into(),
            intended_fps: load,
            offered_fps: load,
            received_fps: load,
            round: Some(round),
            note: None,
            ..row()
        };
        // make demo before the change: each device at 50 % of its own NDR; then round 1 of A
        // at a provisional load, rounds 2-3 of both at the group's load; and a veth device
        // alone in its group.
        let mut alone = at("ovs", 100_000.0, 1);
        alone.topology = "phy2phy-veth".into();
        let rows = vec![
            at("vecswitch-xconnect", 2_000_000.0, 1),
            at("testpmd-io", 500_000.0, 1),
            at("vecswitch-xconnect", 500_000.0, 2),
            at("testpmd-io", 500_000.0, 2),
            alone,
        ];
        let (equal, other) = split_by_common_load(&rows);
        let loads = |v: &[DeviceCostRow]| -> Vec<(String, f64)> {
            v.iter()
                .map(|r| (r.device.clone(), r.intended_fps))
                .collect()
        };
        assert_eq!(
            loads(&equal),
            vec![
                ("testpmd-io".into(), 500_000.0),
                ("vecswitch-xconnect".into(), 500_000.0),
                ("testpmd-io".into(), 500_000.0),
                ("ovs".into(), 100_000.0)
            ]
        );
        assert_eq!(
            loads(&other),
            vec![("vecswitch-xconnect".into(), 2_000_000.0)]
        );
        for text in [markdown(&rows), html(&rows)] {
            let eq = text.find(EQUAL_LOADS_TITLE).unwrap();
            let ot = text.find(OTHER_LOADS_TITLE).unwrap();
            assert!(eq < ot, "{text}");
            // The 2,000 kfps row is in the other-loads section only.
            assert!(!text[eq..ot].contains("2000000"), "{text}");
            assert!(text[ot..].contains("2000000"), "{text}");
            assert!(text.contains("group's lowest NDR"), "{text}");
        }
        // Before the change (each at its own load): no equal-loads section at all.
        let own = vec![
            at("vecswitch-xconnect", 500_000.0, 1),
            at("testpmd-io", 2_000_000.0, 1),
        ];
        let (equal, other) = split_by_common_load(&own);
        assert!(equal.is_empty() && other.len() == 2);
        let md = markdown(&own);
        assert!(
            !md.contains(EQUAL_LOADS_TITLE) && md.contains(OTHER_LOADS_TITLE),
            "{md}"
        );
    }
}
