//! Seed 004's L7 table (issue 12): application traffic through a device or a service chain —
//! L7 throughput, L1 line rate %, average time to first byte — one row per scenario and family,
//! and, for a burn-in, one row per interval.
//!
//! The testbed's L7 suites (`vecswitch_testbed::l7::suite`) fill an [`L7Table`] from their runs
//! and write it into their results document (field `table`); [`markdown`] and [`html`] render
//! it (`vecswitch report md|html` on an L7 results document). The table holds figures already
//! reduced (medians over repeats, sums of counts); the raw runs stay in the document beside it.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::report::svg::{esc, Bar, BarChart};

/// Mean TTFB per class, milliseconds (seed 004's classes).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ClassTtfb {
    pub http_small: Option<f64>,
    pub http_large: Option<f64>,
    pub ftp: Option<f64>,
    pub dns: Option<f64>,
}

/// Illegal flows of a row: sent, denied (refused or timed out), got through; and the packets
/// the firewalls dropped (None without a firewall).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IllegalCell {
    pub sent: u64,
    pub denied: u64,
    pub passed: u64,
    pub device_drops: Option<u64>,
}

/// One scenario and family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7Row {
    pub scenario: String,
    pub family: String,
    pub runs: usize,
    /// Payload throughput, Mbit/s (median over the runs).
    pub l7_mbps: f64,
    /// On-the-wire rate toward the client as a share of the line rate (median).
    pub l1_percent: f64,
    /// Mean TTFB over every completed transaction (seed 004's "weighted average"), ms (median).
    pub avg_ttfb_ms: Option<f64>,
    pub ttfb_ms: ClassTtfb,
    pub p99_http_small_ms: Option<f64>,
    /// Sums over the runs.
    pub transactions: u64,
    pub failed: u64,
    pub illegal: Option<IllegalCell>,
}

/// One interval of a burn-in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7Interval {
    pub scenario: String,
    pub family: String,
    /// From 1.
    pub index: usize,
    pub l7_mbps: f64,
    pub avg_ttfb_ms: Option<f64>,
    pub p99_http_small_ms: Option<f64>,
    pub transactions: u64,
    pub failed: u64,
    pub illegal: Option<IllegalCell>,
}

/// Where a scenario's time went (issue 12: TTFB beside the device's own cost): one process of
/// the device, medians over the runs (counts summed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7CostRow {
    pub scenario: String,
    pub family: String,
    pub avg_ttfb_ms: Option<f64>,
    /// Role and program, e.g. `dut vecswitch`, `vnf vnf-vecswitch-2`.
    pub process: String,
    /// Its CPU(s).
    pub cpus: String,
    /// Non-idle share of its CPU over the run, %, all processes together.
    pub cpu_busy_percent: Option<f64>,
    /// Its CPU time over the run, %.
    pub on_cpu_percent: Option<f64>,
    /// Its own forwarding time (a vecswitch's `loop.busy_ns`) over the run, %.
    pub forwarding_percent: Option<f64>,
    pub forwarding_us_per_packet: Option<f64>,
    pub packets: Option<u64>,
    pub idle_sleeps: Option<u64>,
    /// The placement record's line for its CPU when several roles shared it.
    pub shared: String,
}

/// The cost table's columns.
pub const COST_COLUMNS: [&str; 12] = [
    "scenario",
    "family",
    "avg TTFB (ms)",
    "process",
    "CPU",
    "CPU busy (%)",
    "on CPU (%)",
    "forwarding (%)",
    "forwarding (µs/packet)",
    "packets",
    "idle sleeps",
    "CPU shared",
];

impl L7CostRow {
    fn cells(&self) -> Vec<String> {
        let pct = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
        let n = |v: Option<u64>| v.map_or("-".into(), |x| x.to_string());
        vec![
            self.scenario.clone(),
            self.family.clone(),
            ms(self.avg_ttfb_ms),
            self.process.clone(),
            self.cpus.clone(),
            pct(self.cpu_busy_percent),
            pct(self.on_cpu_percent),
            pct(self.forwarding_percent),
            self.forwarding_us_per_packet
                .map_or("-".into(), |x| format!("{x:.2}")),
            n(self.packets),
            n(self.idle_sleeps),
            if self.shared.is_empty() {
                "-".into()
            } else {
                self.shared.clone()
            },
        ]
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct L7Table {
    pub title: String,
    pub line_rate_gbps: f64,
    pub rows: Vec<L7Row>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<L7Interval>,
    /// Where the time went, per scenario, family and device process.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<L7CostRow>,
    /// Scenarios that could not be measured, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_measured: Vec<String>,
}

/// The main table's columns (Markdown and HTML).
pub const COLUMNS: [&str; 15] = [
    "scenario",
    "family",
    "runs",
    "L7 throughput (Mbit/s)",
    "L1 line rate (%)",
    "avg TTFB (ms)",
    "avg TTFB http-small (ms)",
    "avg TTFB http-large (ms)",
    "avg TTFB ftp (ms)",
    "avg TTFB dns (ms)",
    "p99 TTFB http-small (ms)",
    "transactions",
    "failed",
    "illegal sent / denied / through",
    "firewall drops",
];

/// The burn-in table's columns.
pub const INTERVAL_COLUMNS: [&str; 9] = [
    "scenario",
    "family",
    "interval",
    "L7 throughput (Mbit/s)",
    "avg TTFB (ms)",
    "p99 TTFB http-small (ms)",
    "transactions",
    "failed",
    "illegal sent / denied / through",
];

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

fn illegal(i: &Option<IllegalCell>) -> (String, String) {
    match i {
        None => ("-".into(), "-".into()),
        Some(i) => (
            format!("{} / {} / {}", i.sent, i.denied, i.passed),
            i.device_drops.map_or("-".into(), |d| d.to_string()),
        ),
    }
}

impl L7Row {
    fn cells(&self) -> Vec<String> {
        let (ill, drops) = illegal(&self.illegal);
        vec![
            self.scenario.clone(),
            self.family.clone(),
            self.runs.to_string(),
            format!("{:.1}", self.l7_mbps),
            format!("{:.3}", self.l1_percent),
            ms(self.avg_ttfb_ms),
            ms(self.ttfb_ms.http_small),
            ms(self.ttfb_ms.http_large),
            ms(self.ttfb_ms.ftp),
            ms(self.ttfb_ms.dns),
            ms(self.p99_http_small_ms),
            self.transactions.to_string(),
            self.failed.to_string(),
            ill,
            drops,
        ]
    }

    /// No failed transaction, no illegal flow through.
    pub fn clean(&self) -> bool {
        self.failed == 0 && self.illegal.is_none_or(|i| i.passed == 0)
    }
}

impl L7Interval {
    fn cells(&self) -> Vec<String> {
        vec![
            self.scenario.clone(),
            self.family.clone(),
            self.index.to_string(),
            format!("{:.1}", self.l7_mbps),
            ms(self.avg_ttfb_ms),
            ms(self.p99_http_small_ms),
            self.transactions.to_string(),
            self.failed.to_string(),
            illegal(&self.illegal).0,
        ]
    }
}

fn md_table(s: &mut String, cols: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(s, "| {} |", cols.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cols.len()));
    for r in rows {
        let _ = writeln!(s, "| {} |", r.join(" | "));
    }
}

/// The tables as Markdown: the scenarios, then the burn-in intervals (if any), then what was
/// not measured.
pub fn markdown(t: &L7Table) -> String {
    let mut s = String::new();
    md_table(&mut s, &COLUMNS, t.rows.iter().map(L7Row::cells));
    if !t.intervals.is_empty() {
        s.push_str("\nBurn-in, per interval:\n\n");
        md_table(
            &mut s,
            &INTERVAL_COLUMNS,
            t.intervals.iter().map(L7Interval::cells),
        );
    }
    if !t.costs.is_empty() {
        s.push_str(COST_NOTE);
        md_table(&mut s, &COST_COLUMNS, t.costs.iter().map(L7CostRow::cells));
    }
    for f in &t.not_measured {
        let _ = write!(s, "\nnot measured: {f}\n");
    }
    s
}

/// What the cost table says, above it.
const COST_NOTE: &str = "\nWhere the time went (the device's processes over each run: on CPU = \
the CPU time the kernel charged it; forwarding = a vecswitch's own busy clock, the wall time of \
its poll iterations that received packets, so time it was descheduled inside one counts too. \
Forwarding well above on CPU: preempted in the middle of its work, the delay is scheduling; a \
small forwarding share on a busy, shared CPU: waiting, not processing):\n\n";

/// A table with a first column `#` (the row's number, which the charts use as bar labels).
fn html_table(s: &mut String, cols: &[&str], rows: impl Iterator<Item = (Vec<String>, bool)>) {
    s.push_str("<div class=\"scroll\"><table><tr><th>#</th>");
    for (i, c) in cols.iter().enumerate() {
        let class = if i < 2 { " class=\"t\"" } else { "" };
        let _ = write!(s, "<th{class}>{}</th>", esc(c));
    }
    s.push_str("</tr>");
    for (n, (cells, bad)) in rows.enumerate() {
        s.push_str(if bad { "<tr class=\"tl\">" } else { "<tr>" });
        let _ = write!(s, "<td>{}</td>", n + 1);
        for (i, c) in cells.iter().enumerate() {
            let class = if i < 2 { " class=\"t\"" } else { "" };
            let _ = write!(s, "<td{class}>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
}

/// One self-contained page (inline CSS and SVG): the table (rows with a failed transaction or an
/// illegal flow through in red), bar charts of L7 throughput and average TTFB per scenario and
/// family, and the burn-in intervals.
pub fn html(t: &L7Table) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{}</style></head><body>",
        esc(&t.title),
        crate::report::html::CSS
    );
    let _ = write!(
        s,
        "<h1>{}</h1><p class=\"note\">Seed 004's table: L7 throughput (payload), L1 line rate \
         toward the client as a share of {} Gbit/s, average time to first byte over every \
         completed transaction. Red rows: a transaction failed or an illegal flow got through. \
         The charts' bars are labelled with the table's row numbers.</p>",
        esc(&t.title),
        t.line_rate_gbps
    );
    s.push_str("<h2>Scenarios</h2>");
    html_table(
        &mut s,
        &COLUMNS,
        t.rows.iter().map(|r| (r.cells(), !r.clean())),
    );
    for (title, y, value) in [
        (
            "L7 throughput per scenario",
            "Mbit/s",
            (|r: &L7Row| Some(r.l7_mbps)) as fn(&L7Row) -> Option<f64>,
        ),
        (
            "Average time to first byte per scenario",
            "ms",
            |r: &L7Row| r.avg_ttfb_ms,
        ),
    ] {
        let chart = BarChart {
            title: title.into(),
            y_label: y.into(),
            bars: t
                .rows
                .iter()
                .enumerate()
                .filter_map(|(n, r)| {
                    // Labelled by the table's row number: the bars are too narrow for names.
                    Some(Bar {
                        label: format!("#{}", n + 1),
                        value: value(r)?,
                        range: None,
                        flag: false,
                    })
                })
                .collect(),
        };
        if !chart.bars.is_empty() {
            let _ = write!(s, "<figure>{}</figure>", chart.render());
        }
    }
    if !t.intervals.is_empty() {
        s.push_str("<h2>Burn-in, per interval</h2>");
        html_table(
            &mut s,
            &INTERVAL_COLUMNS,
            t.intervals.iter().map(|i| {
                let bad = i.failed > 0 || i.illegal.is_some_and(|x| x.passed > 0);
                (i.cells(), bad)
            }),
        );
    }
    if !t.costs.is_empty() {
        let _ = write!(
            s,
            "<h2>Where the time went</h2><p class=\"note\">{}</p>",
            esc(COST_NOTE.trim())
        );
        html_table(
            &mut s,
            &COST_COLUMNS,
            t.costs.iter().map(|c| (c.cells(), false)),
        );
    }
    if !t.not_measured.is_empty() {
        s.push_str("<h2>Not measured</h2><ul>");
        for f in &t.not_measured {
            let _ = write!(s, "<li>{}</li>", esc(f));
        }
        s.push_str("</ul>");
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> L7Table {
        let row = |scenario: &str, family: &str, failed, passed: Option<u64>| L7Row {
            scenario: scenario.into(),
            family: family.into(),
            runs: 1,
            l7_mbps: 62.5,
            l1_percent: 0.66,
            avg_ttfb_ms: Some(4.25),
            ttfb_ms: ClassTtfb {
                http_small: Some(3.0),
                http_large: Some(5.5),
                ftp: Some(12.0),
                dns: None,
            },
            p99_http_small_ms: Some(9.0),
            transactions: 60,
            failed,
            illegal: passed.map(|p| IllegalCell {
                sent: 3,
                denied: 3 - p,
                passed: p,
                device_drops: Some(7),
            }),
        };
        L7Table {
            title: "edge <chain>".into(),
            line_rate_gbps: 10.0,
            rows: vec![
                row("vecswitch", "ipv4", 0, None),
                row("vecswitch, firewall", "ipv4", 0, Some(0)),
                row("kernel: bridge", "ipv6", 2, Some(1)),
            ],
            intervals: vec![L7Interval {
                scenario: "vecswitch, firewall".into(),
                family: "ipv4".into(),
                index: 1,
                l7_mbps: 61.0,
                avg_ttfb_ms: Some(3.5),
                p99_http_small_ms: None,
                transactions: 200,
                failed: 0,
                illegal: None,
            }],
            costs: vec![L7CostRow {
                scenario: "vecswitch, firewall".into(),
                family: "ipv4".into(),
                avg_ttfb_ms: Some(4.25),
                process: "vnf vnf-vecswitch".into(),
                cpus: "1".into(),
                cpu_busy_percent: Some(97.5),
                on_cpu_percent: Some(31.0),
                forwarding_percent: Some(0.4),
                forwarding_us_per_packet: Some(2.5),
                packets: Some(1600),
                idle_sleeps: Some(4000),
                shared: "cpu 1 shared by dut (vecswitch) and vnf (vnf-vecswitch)".into(),
            }],
            not_measured: vec!["x: y".into()],
        }
    }

    #[test]
    fn markdown_has_seed_004s_columns_and_every_row() {
        let md = markdown(&sample());
        assert!(
            md.contains("| L7 throughput (Mbit/s) | L1 line rate (%) | avg TTFB (ms) |"),
            "{md}"
        );
        assert!(md.contains("| vecswitch, firewall | ipv4 | 1 | 62.5 | 0.660 | 4.25 | 3.00 | 5.50 | 12.00 | - | 9.00 | 60 | 0 | 3 / 3 / 0 | 7 |"), "{md}");
        assert!(md.contains("| vecswitch | ipv4 | 1 | 62.5 |"), "{md}");
        assert!(md.contains("| - | - |\n"), "no illegal flows: {md}");
        assert!(md.contains("Burn-in, per interval"), "{md}");
        assert!(
            md.contains("| vecswitch, firewall | ipv4 | 1 | 61.0 | 3.50 | - | 200 | 0 | - |"),
            "{md}"
        );
        assert!(md.contains("not measured: x: y"));
        assert!(md.contains("Where the time went"), "{md}");
        assert!(md.contains("| vecswitch, firewall | ipv4 | 4.25 | vnf vnf-vecswitch | 1 | 97.5 | 31.0 | 0.4 | 2.50 | 1600 | 4000 | cpu 1 shared by dut (vecswitch) and vnf (vnf-vecswitch) |"), "{md}");
        let t = sample();
        let back: L7Table = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn html_is_one_page_with_the_table_charts_and_bad_rows_marked() {
        let h = html(&sample());
        assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</html>\n"));
        assert!(h.contains("edge &lt;chain&gt;"), "escaped title");
        assert_eq!(h.matches("<svg").count(), 2);
        assert_eq!(
            h.matches("<tr class=\"tl\">").count(),
            1,
            "the kernel row failed"
        );
        assert!(h.contains("<th>avg TTFB (ms)</th>"));
        assert!(h.contains("Burn-in, per interval"));
        assert!(h.contains("<h2>Where the time went</h2>"));
        assert!(!h.contains("<script"));
    }
}
