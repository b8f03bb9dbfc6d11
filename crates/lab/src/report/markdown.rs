//! Markdown rendering in VSPERF's `result_<test>.md` layout: a header list per test (Test ID,
//! Description, Deployment, Traffic type, Bidirectional), then `Metric | Result` for single-row
//! results or a table for multi-row ones (latency fractions, sweep steps, MLRsearch goals).

use std::fmt::Write;

use crate::report::summary::{settings, summary, TESTER_NOTE};
use crate::results::{Cell, Row, RunResults, COLUMNS};

/// Columns that identify the test and are shown in its header instead of its table.
const HEADER_COLUMNS: &[&str] = &[
    "id",
    "deployment",
    "vswitch",
    "traffic_type",
    "packet_size",
    "procedure",
];

pub fn render(run: &RunResults) -> String {
    let mut s = String::new();
    let p = &run.provenance;
    let _ = writeln!(s, "# vecswitch benchmark results\n");
    let _ = writeln!(s, "- Schema: `{}`", run.schema);
    let _ = writeln!(s, "- Date: {}", p.date);
    let _ = writeln!(
        s,
        "- Git revision: {}{}",
        p.git_revision.as_deref().unwrap_or("unknown"),
        if p.git_dirty == Some(true) {
            " (dirty)"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "- Command: `{}`", p.command.join(" "));
    let _ = writeln!(
        s,
        "- Host: {} — kernel {} — {} × {}",
        opt(&p.hostname),
        opt(&p.kernel),
        p.cores.unwrap_or(0),
        opt(&p.cpu_model)
    );
    if let Some(g) = &run.generator {
        let _ = writeln!(s, "- Generator: {}", g.name);
        for c in &g.calibrated_limits {
            let on = c
                .topology
                .as_deref()
                .map(|t| format!(" on {t}"))
                .unwrap_or_default();
            let how = c
                .method
                .as_deref()
                .map(|m| format!(" — {m}"))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  - calibrated limit{on} at {}: {:.0} frames/s{how}",
                c.size_label(),
                c.max_fps
            );
            if let Some(f) = &c.latency_floor {
                // Labelled, beside the results: every latency below includes it (not subtracted).
                let _ = writeln!(s, "    - {f} — included in every latency below");
            }
        }
    }
    if let Some(why) = &run.stopped {
        let _ = writeln!(
            s,
            "\n> **Stopped early**: {why}. The tests below are those measured before the stop."
        );
    }
    for f in &run.failures {
        let _ = writeln!(s, "\n> **Not measured**: {f}");
    }
    s.push('\n');
    let sum = summary(run);
    if !sum.rows.is_empty() {
        let _ = writeln!(s, "## Summary\n");
        let _ = writeln!(s, "| {} |", sum.header.join(" | "));
        let _ = writeln!(s, "|{}", "---|".repeat(sum.header.len()));
        for r in &sum.rows {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        if sum.tester_limited {
            let _ = writeln!(s, "\n{TESTER_NOTE}");
        }
        let how = settings(run);
        if !how.is_empty() {
            let _ = writeln!(s, "\nHow the figures were measured:\n");
            for h in how {
                let _ = writeln!(s, "- {h}");
            }
        }
        s.push('\n');
    }
    s.push_str(&crate::device_cost::markdown(&run.device_cost));
    for t in &run.tests {
        let _ = writeln!(
            s,
            "## {} — {}, {} ({})\n",
            t.id,
            t.vswitch,
            t.size_label(),
            t.outcome.name()
        );
        let _ = writeln!(s, "- Test ID: {}", t.id);
        let _ = writeln!(s, "- Description: {}", t.description);
        let _ = writeln!(s, "- Deployment: {}", t.deployment);
        let _ = writeln!(s, "- Traffic type: {}", t.traffic_type);
        let _ = writeln!(
            s,
            "- Bidirectional: {}",
            if t.bidirectional { "True" } else { "False" }
        );
        if let Some(topo) = &t.topology {
            let _ = writeln!(s, "- Topology: {topo}");
        }
        if let Some(mean) = t.line.mean_frame_bytes {
            let _ = writeln!(
                s,
                "- Frame sizes: {} (mean {mean:.2} B; line rate and Mb/s use the mean)",
                t.size_label()
            );
        }
        let _ = writeln!(
            s,
            "- Line rate: {} × {:.0} Mb/s",
            t.line.ports,
            t.line.bits_per_second / 1e6
        );
        if let Some(x) = t.scale {
            let _ = writeln!(s, "- Scale: {x}");
        }
        s.push('\n');
        let rows = t.rows();
        if rows
            .iter()
            .any(|r| r.get("tester_limited") == Some(&Cell::Flag(true)))
        {
            let _ = writeln!(s, "> **Tester-limited**: the generator could not offer the intended load in some trials; those results are the tester's ceiling, not DUT loss.\n");
        }
        if rows.len() == 1 {
            let _ = writeln!(s, "| Metric | Result |\n|---|---|");
            for c in COLUMNS.iter().filter(|c| !HEADER_COLUMNS.contains(c)) {
                if let Some(v) = rows[0].get(c) {
                    let _ = writeln!(s, "| {c} | {v} |");
                }
            }
        } else {
            table(&mut s, &rows);
        }
        s.push('\n');
    }
    s
}

fn table(s: &mut String, rows: &[Row]) {
    let cols: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .filter(|c| !HEADER_COLUMNS.contains(c) && rows.iter().any(|r| r.contains_key(c)))
        .collect();
    let _ = writeln!(s, "| {} |", cols.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cols.len()));
    for r in rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| r.get(c).map(|v| v.to_string()).unwrap_or_default())
            .collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_run;

    #[test]
    fn vsperf_layout_with_metric_table() {
        let run = sample_run();
        let md = render(&run);
        assert!(md.contains("- Test ID: phy2phy_tput"));
        assert!(md.contains("| Metric | Result |"));
        assert!(md.contains("| throughput_rx_fps |"));
        assert!(md.contains("| min_latency_ns |"));
        assert!(md.contains("calibrated limit at 64 B"));
        assert!(md.contains("## Summary"));
        // Multi-row tests get a table with one line per row.
        assert!(md.contains("| goal |") || md.contains("| goal | "));
        assert!(md.contains("**Tester-limited**"));
    }
}
