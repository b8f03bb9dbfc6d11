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

/// The "Device cost" section of the Markdown report (empty when there are no rows).
pub fn markdown(rows: &[DeviceCostRow]) -> String {
    let mut s = String::new();
    if rows.is_empty() {
        return s;
    }
    let _ = writeln!(s, "## Device cost at equal offered loads\n");
    let _ = writeln!(
        s,
        "| device | topology | frame | offered fps | received fps | device rx fps | busy | cycles/packet | est. capacity fps (estimate) | idle polls | method | round |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(12));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0}{} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            r.device,
            r.topology,
            r.frame_size,
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
    // The load of each cell, when the suite chose it per cell (once per cell, not per round).
    let mut said: Vec<(String, String, String)> = Vec::new();
    for r in rows {
        let Some(b) = &r.load_basis else { continue };
        let k = (
            r.device.clone(),
            r.topology.clone(),
            size_key(&r.frame_size),
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
    s
}

/// The same table as HTML for the self-contained report (empty when there are no rows).
pub fn html(rows: &[DeviceCostRow]) -> String {
    use crate::report::svg::esc;
    let mut s = String::new();
    if rows.is_empty() {
        return s;
    }
    let _ = write!(
        s,
        "<h2>Device cost at equal offered loads</h2><p class=note>Busy time of each device's forwarding core per packet at the same offered load (medians of the repetitions; how each device's busy time is read: docs/TESTBED.md, Device cost). Estimated capacity = device receive rate ÷ busy fraction: an extrapolation assuming a constant cost per packet, not a measurement; none above {:.0} % busy.</p><div class=scroll><table><tr>",
        SATURATED_BUSY_FRACTION * 100.0
    );
    for h in [
        "device",
        "topology",
        "frame",
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
    s
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
        assert!(md.contains("| vecswitch-xconnect | phy2phy-memif | 64 | 99990 | 99990 | 99990 | 25.0 % | 6500 | ≈ 399960 | 50.0 % | its own busy clocks | — |"), "{md}");
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
}
