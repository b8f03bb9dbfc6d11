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
        "| device | topology | frame | offered fps | received fps | device rx fps | busy | cycles/packet | est. capacity fps (estimate) | idle polls | method |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(11));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0}{} | {:.0} | {} | {} | {} | {} | {} | {} |",
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
            r.note.clone().unwrap_or_default(),
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
    fn markdown_table_labels_the_estimate() {
        assert_eq!(markdown(&[]), "");
        let md = markdown(&[row()]);
        assert!(md.contains("## Device cost"), "{md}");
        assert!(md.contains("| vecswitch-xconnect | phy2phy-memif | 64 | 99990 | 99990 | 99990 | 25.0 % | 6500 | ≈ 399960 | 50.0 % |"), "{md}");
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
