//! `compare(a, b, threshold)`: what got worse from run A to run B.
//!
//! Rows of both runs ([`TestRecord::rows`](crate::results::TestRecord::rows)) are matched by what
//! identifies them (test id, device, deployment, frame size, procedure, goal, scale, flows). For
//! each matched pair the key metrics are compared: throughput-like metrics regress when they drop
//! by more than `threshold_pct` percent, latency and loss when they rise by more than it. Loss
//! must also grow by more than [`LOSS_FLOOR_PERCENT`] percentage points (0.001 %, the tolerance
//! EANTC accepted in seed 000), so sporadic few-frame losses do not drown real regressions; a
//! loss appearing where there was none is a regression once above that floor. Rows present in
//! only one run are listed. A change involving a tester-limited row is marked, because it may be
//! the tester's.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::results::{Cell, Row, RunResults};

/// Metrics where higher is better.
const HIGHER_BETTER: &[&str] = &["throughput_rx_fps", "lower_bound_fps", "b2b_frames"];
/// Metrics where lower is better.
const LOWER_BETTER: &[&str] = &[
    "avg_latency_ns",
    "max_latency_ns",
    "p99_latency_ns",
    "frame_loss_percent",
];
/// Loss changes smaller than this many percentage points are noise, not regressions.
pub const LOSS_FLOOR_PERCENT: f64 = 0.001;
/// Columns that identify a row.
const KEY: &[&str] = &[
    "id",
    "vswitch",
    "deployment",
    "packet_size",
    "procedure",
    "goal",
    "scale",
    "flows",
];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub key: String,
    pub metric: &'static str,
    pub a: f64,
    pub b: f64,
    /// (b − a) / a × 100; infinite when a is 0.
    pub change_pct: f64,
    pub tester_limited: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub threshold_pct: f64,
    pub regressions: Vec<Change>,
    pub improvements: Vec<Change>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

impl Comparison {
    pub fn has_regressions(&self) -> bool {
        !self.regressions.is_empty()
    }

    /// A plain-text report (also valid Markdown).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "# Comparison (threshold {}%)\n", self.threshold_pct);
        let section = |s: &mut String, title: &str, list: &[Change]| {
            let _ = writeln!(s, "## {title}: {}\n", list.len());
            if !list.is_empty() {
                let _ = writeln!(
                    s,
                    "| test | metric | A | B | change |\n|---|---|---|---|---|"
                );
                for c in list {
                    let tl = if c.tester_limited {
                        " (tester-limited)"
                    } else {
                        ""
                    };
                    let pct = if c.change_pct.is_finite() {
                        format!("{:+.2}%", c.change_pct)
                    } else {
                        "new".into()
                    };
                    let (a, b) = (Cell::Num(c.a), Cell::Num(c.b));
                    let _ = writeln!(s, "| {}{tl} | {} | {a} | {b} | {pct} |", c.key, c.metric);
                }
                s.push('\n');
            }
        };
        section(&mut s, "Regressions", &self.regressions);
        section(&mut s, "Improvements", &self.improvements);
        for (title, list) in [
            ("Only in A", &self.only_in_a),
            ("Only in B", &self.only_in_b),
        ] {
            if !list.is_empty() {
                let _ = writeln!(s, "## {title}\n");
                for k in list {
                    let _ = writeln!(s, "- {k}");
                }
                s.push('\n');
            }
        }
        s
    }
}

fn key_of(r: &Row) -> String {
    KEY.iter()
        .filter_map(|k| r.get(k).map(|v| format!("{k}={v}")))
        .collect::<Vec<_>>()
        .join(" ")
}

fn rows_by_key(run: &RunResults) -> BTreeMap<String, Row> {
    run.tests
        .iter()
        .flat_map(|t| t.rows())
        .map(|r| (key_of(&r), r))
        .collect()
}

pub fn compare(a: &RunResults, b: &RunResults, threshold_pct: f64) -> Comparison {
    let ra = rows_by_key(a);
    let rb = rows_by_key(b);
    let mut out = Comparison {
        threshold_pct,
        regressions: Vec::new(),
        improvements: Vec::new(),
        only_in_a: ra
            .keys()
            .filter(|k| !rb.contains_key(*k))
            .cloned()
            .collect(),
        only_in_b: rb
            .keys()
            .filter(|k| !ra.contains_key(*k))
            .cloned()
            .collect(),
    };
    for (key, row_a) in &ra {
        let Some(row_b) = rb.get(key) else { continue };
        let tl = [row_a, row_b]
            .iter()
            .any(|r| r.get("tester_limited") == Some(&Cell::Flag(true)));
        for (metrics, higher_better) in [(HIGHER_BETTER, true), (LOWER_BETTER, false)] {
            for &m in metrics {
                let (Some(va), Some(vb)) = (
                    row_a.get(m).and_then(Cell::num),
                    row_b.get(m).and_then(Cell::num),
                ) else {
                    continue;
                };
                let change_pct = if va == 0.0 {
                    if vb == 0.0 {
                        0.0
                    } else {
                        f64::INFINITY * vb.signum()
                    }
                } else {
                    (vb - va) / va.abs() * 100.0
                };
                let worse = if higher_better {
                    -change_pct
                } else {
                    change_pct
                };
                if m == "frame_loss_percent" && (vb - va).abs() <= LOSS_FLOOR_PERCENT {
                    continue;
                }
                let c = Change {
                    key: key.clone(),
                    metric: m,
                    a: va,
                    b: vb,
                    change_pct,
                    tester_limited: tl,
                };
                if worse > threshold_pct {
                    out.regressions.push(c);
                } else if -worse > threshold_pct {
                    out.improvements.push(c);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_run;
    use crate::results::Outcome;

    #[test]
    fn identical_runs_have_no_changes() {
        let a = sample_run();
        let c = compare(&a, &a, 1.0);
        assert!(!c.has_regressions() && c.improvements.is_empty());
        assert!(c.only_in_a.is_empty() && c.only_in_b.is_empty());
    }

    #[test]
    fn throughput_drop_beyond_threshold_is_a_regression() {
        let a = sample_run();
        let mut b = a.clone();
        let Outcome::Throughput(t) = &mut b.tests[0].outcome else {
            panic!("first sample test is throughput")
        };
        let x = t.throughput_fps.unwrap();
        // Scale every trial's received count at the result down by 10 %.
        for tr in t.trials.iter_mut().filter(|tr| tr.intended_load.fps == x) {
            tr.received_frames = (tr.received_frames as f64 * 0.9) as u64;
        }
        let c = compare(&a, &b, 5.0);
        let r = c
            .regressions
            .iter()
            .find(|r| r.metric == "throughput_rx_fps")
            .expect("regression found");
        assert!((r.change_pct + 10.0).abs() < 0.01, "{}", r.change_pct);
        // New loss appeared where there was none.
        assert!(c
            .regressions
            .iter()
            .any(|r| r.metric == "frame_loss_percent" && r.change_pct.is_infinite()));
        // Within a 20 % threshold the throughput drop is tolerated.
        assert!(!compare(&a, &b, 20.0)
            .regressions
            .iter()
            .any(|r| r.metric == "throughput_rx_fps"));
        // And B → A is an improvement.
        assert!(compare(&b, &a, 5.0)
            .improvements
            .iter()
            .any(|r| r.metric == "throughput_rx_fps"));
        assert!(c.render().contains("throughput_rx_fps"));
    }

    #[test]
    fn loss_below_the_floor_is_noise() {
        let a = sample_run();
        let mut b = a.clone();
        let Outcome::Throughput(t) = &mut b.tests[0].outcome else {
            panic!()
        };
        let x = t.throughput_fps.unwrap();
        // One frame lost out of millions: far below 0.001 %.
        for tr in t.trials.iter_mut().filter(|tr| tr.intended_load.fps == x) {
            tr.received_frames -= 1;
        }
        let c = compare(&a, &b, 1.0);
        assert!(
            !c.regressions
                .iter()
                .any(|r| r.metric == "frame_loss_percent"),
            "{:?}",
            c.regressions
        );
    }

    #[test]
    fn missing_tests_are_listed() {
        let a = sample_run();
        let mut b = a.clone();
        b.tests.remove(0);
        let c = compare(&a, &b, 1.0);
        assert!(c.only_in_a.iter().any(|k| k.contains("phy2phy_tput")));
        assert!(c.only_in_b.is_empty());
    }
}
