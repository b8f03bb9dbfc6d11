//! The side-by-side summary of a run: one line per topology × device × frame size, one column per
//! throughput test (plain RFC 2544, best-of-N, worst-of-N …) and per MLRsearch goal (NDR, PDR:
//! the median of the cell's searches and rounds with their [min, max],
//! [`crate::report::agree::headlines`]), the device's cost, latency at the throughput, and the
//! generator's calibrated limit beside them. Markdown and HTML render the same [`Summary`].

use std::fmt::Write as _;

use crate::report::agree::{headline_key, headlines, Headline};
use crate::results::{Cell, Outcome, RunResults};

/// Marker appended to a figure that is at, or limited by, the generator.
pub const TESTER_MARK: &str = " †";

/// Footnote explaining [`TESTER_MARK`].
pub const TESTER_NOTE: &str = "† tester-limited: the generator could not offer more (its calibrated limit is in the last column); the device may forward more. Compare such devices by their cost per packet (the device cost column, where the run measured it), not by this figure.";

/// A table of strings: header and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Whether any figure carries [`TESTER_MARK`].
    pub tester_limited: bool,
}

fn mfps(x: f64) -> String {
    format!("{:.3}", x / 1e6)
}

/// Builds the summary of `run` (tests in their order; scale-sweep points are left out).
pub fn summary(run: &RunResults) -> Summary {
    let mut tput_ids: Vec<String> = Vec::new();
    // (MLRsearch test id, goal) in the order the run measured them.
    let mut goal_cols: Vec<(String, String)> = Vec::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for t in run.tests.iter().filter(|t| t.scale.is_none()) {
        if let Outcome::Mlrsearch(m) = &t.outcome {
            for g in &m.goals {
                let c = (t.id.clone(), g.goal.name.clone());
                if !goal_cols.contains(&c) {
                    goal_cols.push(c);
                }
            }
        } else if t.outcome.name() == "throughput" && !tput_ids.contains(&t.id) {
            tput_ids.push(t.id.clone());
        }
        let k = (
            t.topology.clone().unwrap_or_else(|| t.deployment.clone()),
            t.vswitch.clone(),
            t.size_label(),
        );
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut header = vec!["topology".to_string(), "device".into(), "frame size".into()];
    header.extend(tput_ids.iter().map(|id| format!("{id} Mfps (% of line)")));
    header.extend(
        goal_cols
            .iter()
            .map(|(id, g)| format!("{id} {g} Mfps (% of line) [min, max]")),
    );
    let heads = headlines(run);
    // The device's cost beside its figures (issue 7 item 6): where the figures are the tester's
    // ceiling (†), this is the comparison the run can make.
    let with_cost = !run.device_cost.is_empty();
    if with_cost {
        header.push("device cost: cycles/packet (core idle) at load".into());
    }
    header.push("latency avg / p99 µs at throughput".into());
    header.push("generator limit Mfps".into());
    let mut rows = Vec::new();
    let mut any_limited = false;
    for (topo, dev, size) in &keys {
        let tests: Vec<_> = run
            .tests
            .iter()
            .filter(|t| t.scale.is_none() && &t.vswitch == dev && &t.size_label() == size)
            .filter(|t| t.topology.clone().unwrap_or_else(|| t.deployment.clone()) == *topo)
            .collect();
        let mut row = vec![topo.clone(), dev.clone(), size.clone()];
        for id in &tput_ids {
            let cell = tests
                .iter()
                .find(|t| &t.id == id && t.outcome.name() == "throughput")
                .map(|t| {
                    let r = &t.rows()[0];
                    let limited = r.get("tester_limited") == Some(&Cell::Flag(true));
                    any_limited |= limited;
                    let mark = if limited { TESTER_MARK } else { "" };
                    match (
                        r.get("throughput_rx_fps").and_then(Cell::num),
                        r.get("throughput_rx_percent").and_then(Cell::num),
                    ) {
                        (Some(x), Some(p)) => format!("{} ({p:.1} %){mark}", mfps(x)),
                        _ => format!("none passed{mark}"),
                    }
                });
            row.push(cell.unwrap_or_else(|| "—".into()));
        }
        for (id, goal) in &goal_cols {
            let t = tests.iter().find(|t| {
                &t.id == id && matches!(&t.outcome, Outcome::Mlrsearch(m) if m.goals.iter().any(|g| &g.goal.name == goal))
            });
            let cell = match t.map(|t| heads.get(&headline_key(t, goal))) {
                None => "—".to_string(),
                Some(None) => "none passed".to_string(),
                Some(Some(h)) => {
                    any_limited |= h.figure.tester_limited;
                    goal_cell(h)
                }
            };
            row.push(cell);
        }
        if with_cost {
            row.push(cost_cell(run, topo, dev, size));
        }
        let lat = tests
            .iter()
            .find(|t| t.outcome.name() == "latency")
            .and_then(|t| {
                let r = t.rows().into_iter().next()?;
                let avg = r.get("avg_latency_ns").and_then(Cell::num)?;
                let p99 = r.get("p99_latency_ns").and_then(Cell::num)?;
                Some(format!("{:.1} / {:.1}", avg / 1e3, p99 / 1e3))
            });
        row.push(lat.unwrap_or_else(|| "—".into()));
        let limit = tests.iter().find_map(|t| {
            t.generator_limit_fps
                .or_else(|| run.generator.as_ref().and_then(|g| g.limit_for_test(t)))
        });
        row.push(limit.map_or_else(|| "—".into(), mfps));
        rows.push(row);
    }
    Summary {
        header,
        rows,
        tester_limited: any_limited,
    }
}

/// One MLRsearch goal of one cell: `2.348 (15.8 %) [1.805, 3.710] †` (the interval over the
/// cell's searches and rounds when there was more than one).
fn goal_cell(h: &Headline) -> String {
    let f = &h.figure;
    let mut c = mfps(f.fps);
    if h.line_fps > 0.0 {
        let _ = write!(c, " ({:.1} %)", f.fps / h.line_fps * 100.0);
    }
    if let Some((lo, hi)) = f.interval {
        let _ = write!(c, " [{}, {}]", mfps(lo), mfps(hi));
    }
    if f.tester_limited {
        c.push_str(TESTER_MARK);
    }
    c
}

/// The device-cost rows of one device, topology and size, merged over rounds:
/// `6500 [6100, 7000] (75 % idle) at 30 kfps`, one per load, `—` when none.
fn cost_cell(run: &RunResults, topo: &str, dev: &str, size: &str) -> String {
    let norm = |l: &str| l.replace(' ', "");
    let merged = crate::device_cost::merge_rows(&run.device_cost);
    let cells: Vec<String> = merged
        .iter()
        .filter(|r| r.device == dev && r.topology == topo && norm(&r.frame_size) == norm(size))
        .map(|r| {
            let cpp = r
                .cycles_per_packet
                .map_or_else(|| "—".to_string(), |c| format!("{c:.0}"));
            let range = r
                .range
                .map(|(lo, hi)| format!(" [{lo:.0}, {hi:.0}]"))
                .unwrap_or_default();
            let idle = r
                .idle_fraction()
                .map(|i| format!(" ({:.0} % idle)", i * 100.0))
                .unwrap_or_default();
            format!("{cpp}{range}{idle} at {:.0} kfps", r.intended_fps / 1e3)
        })
        .collect();
    if cells.is_empty() {
        "—".into()
    } else {
        cells.join("; ")
    }
}

/// One sentence per test of the suite the run used (from the provenance's config): what a figure
/// in the summary means — trials per step, trial length, resolution, loss tolerance, sizes.
pub fn settings(run: &RunResults) -> Vec<String> {
    let Some(cfg) = run.provenance.config.as_ref() else {
        return Vec::new();
    };
    let num = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    let text = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let mut out = Vec::new();
    for t in cfg
        .get("test")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
    {
        let proc_ = text(t, "procedure").unwrap_or_default();
        let id = text(t, "id").unwrap_or_else(|| proc_.clone());
        let mut parts = Vec::new();
        match proc_.as_str() {
            "throughput" => {
                parts.push(match text(t, "policy").as_deref() {
                    Some("single") | None => {
                        "RFC 2544 §26.1 binary search, one trial per step".to_string()
                    }
                    Some(p) => {
                        format!("binary search, each step decided {p} (BestN/WorstN, seed 000)")
                    }
                });
                if let Some(d) = num(t, "trial_duration_s") {
                    parts.push(format!("{d} s trials"));
                }
                let max = match text(t, "search_max").as_deref() {
                    Some("generator-limit") => "the generator's calibrated limit",
                    _ => "line rate",
                };
                if let Some(r) = num(t, "resolution_percent") {
                    parts.push(format!("from {max} down to a resolution of {r} % of it"));
                }
                if let Some(l) = num(t, "loss_tolerance_percent") {
                    parts.push(format!("loss tolerance {l} %"));
                }
                if t.get("verify").and_then(serde_json::Value::as_bool) == Some(true) {
                    parts.push("verified by one more trial at the result".into());
                }
            }
            "latency" => {
                if let Some(f) = t
                    .get("fractions_percent")
                    .and_then(serde_json::Value::as_array)
                {
                    let f: Vec<String> = f
                        .iter()
                        .filter_map(serde_json::Value::as_f64)
                        .map(|x| format!("{x} %"))
                        .collect();
                    parts.push(format!(
                        "RFC 2544 §26.2 at {} of the throughput",
                        f.join(", ")
                    ));
                }
                if let (Some(d), Some(n)) = (num(t, "trial_duration_s"), num(t, "repetitions")) {
                    parts.push(format!("{n} × {d} s"));
                }
            }
            "mlrsearch" => {
                let goals: Vec<String> = t
                    .get("goals")
                    .and_then(serde_json::Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|g| {
                        let name = text(g, "name").unwrap_or_default();
                        let mut d = format!(
                            "{name} at {} % loss, exceed ratio {}",
                            num(g, "loss_percent").unwrap_or(0.0),
                            num(g, "exceed_ratio").unwrap_or(0.5)
                        );
                        if let (Some(i), Some(f), Some(sum), Some(w)) = (
                            num(g, "initial_trial_duration_s"),
                            num(g, "final_trial_duration_s"),
                            num(g, "duration_sum_s"),
                            num(g, "relative_width"),
                        ) {
                            let _ = write!(
                                d,
                                ", {i}–{f} s trials summing to {sum} s, width {} %",
                                w * 100.0
                            );
                        }
                        d
                    })
                    .collect();
                parts.push(if goals.is_empty() {
                    "MLRsearch NDR and PDR (draft-ietf-bmwg-mlrsearch)".to_string()
                } else {
                    format!(
                        "MLRsearch (draft-ietf-bmwg-mlrsearch): {}",
                        goals.join("; ")
                    )
                });
                if let Some(n) = num(t, "searches").filter(|n| *n > 1.0) {
                    // A real bench records its rounds; a simulated run (or one from before
                    // rounds) repeated the searches in one measurer.
                    let rounds = run
                        .tests
                        .iter()
                        .any(|t| t.setup.as_ref().is_some_and(|s| s.get("rounds").is_some()));
                    parts.push(if rounds {
                        format!(
                            "{n} searches, each on a freshly started device, interleaved with \
                             the other devices (rounds): median and [min, max]"
                        )
                    } else {
                        format!("{n} searches in one device process: median and [min, max]")
                    });
                }
            }
            other => parts.push(other.to_string()),
        }
        if let Some(f) = t.get("frame_sizes").and_then(serde_json::Value::as_array) {
            let f: Vec<String> = f
                .iter()
                .map(|v| v.as_str().map_or_else(|| format!("{v} B"), str::to_string))
                .collect();
            parts.push(format!("only at {}", f.join(", ")));
        }
        out.push(format!("{id}: {}", parts.join("; ")));
    }
    if let Some(t) = num(cfg, "tester_tolerance_percent") {
        out.push(format!(
            "tester-limited: a trial whose generator offered less than {} % of the intended frames",
            100.0 - t
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_run;

    #[test]
    fn one_line_per_device_and_size_with_the_generator_limit() {
        let run = sample_run();
        let s = summary(&run);
        assert_eq!(&s.header[..3], &["topology", "device", "frame size"]);
        assert!(
            s.header.iter().any(|h| h.starts_with("phy2phy_tput ")),
            "{:?}",
            s.header
        );
        // The demo: 2 devices × 6 sizes.
        assert_eq!(s.rows.len(), 12);
        assert!(s.rows.iter().all(|r| r.len() == s.header.len()));
        // Every line shows the simulated generator's limit (demo.rs) in the last column.
        let last = s.header.len() - 1;
        assert!(
            s.rows
                .iter()
                .all(|r| r[last] == mfps(crate::demo::SIM_GENERATOR_LIMIT_FPS)),
            "{:?}",
            s.rows
        );
    }

    #[test]
    fn device_cost_is_shown_beside_the_figures() {
        let mut run = sample_run();
        let s = summary(&run);
        assert!(!s.header.iter().any(|h| h.starts_with("device cost")));
        let dev = run.tests[0].vswitch.clone();
        let topo = run.tests[0]
            .topology
            .clone()
            .unwrap_or_else(|| run.tests[0].deployment.clone());
        let size = run.tests[0].size_label();
        run.device_cost.push(crate::device_cost::DeviceCostRow {
            device: dev.clone(),
            topology: topo.clone(),
            frame_size: size.clone(),
            intended_fps: 30_000.0,
            offered_fps: 30_000.0,
            received_fps: 30_000.0,
            device_rx_fps: Some(30_000.0),
            busy_fraction: Some(0.25),
            cycles_per_packet: Some(6_500.0),
            estimated_capacity_fps: None,
            idle_poll_fraction: None,
            method: "test".into(),
            repetitions: 3,
            tester_limited: false,
            note: None,
            round: None,
            load_basis: None,
        });
        let s = summary(&run);
        let col = s
            .header
            .iter()
            .position(|h| h.starts_with("device cost"))
            .expect("a device cost column");
        let row = s
            .rows
            .iter()
            .find(|r| r[0] == topo && r[1] == dev && r[2] == size)
            .unwrap();
        assert_eq!(row[col], "6500 (75 % idle) at 30 kfps");
        // Other devices and sizes have none; the generator's limit stays the last column.
        assert!(s.rows.iter().filter(|r| r[col] == "—").count() == s.rows.len() - 1);
        assert!(s.rows.iter().all(|r| r.len() == s.header.len()));
        assert_eq!(s.header.last().unwrap(), "generator limit Mfps");
    }

    #[test]
    fn mlrsearch_goals_are_columns_merged_over_rounds() {
        // Three rounds of one device's NDR/PDR search (three records of the same cell) and one
        // record of another device: one line each, NDR and PDR columns with the rounds' median
        // and [min, max].
        use crate::procedures::mlrsearch::{GoalResult, MlrResult, SearchGoal};
        let rec = |dev: &str, ndr: f64, limited: bool| {
            let goal = |g: SearchGoal, l: f64, tl: bool| GoalResult {
                goal: g,
                relevant_lower_bound_fps: Some(l),
                relevant_upper_bound_fps: None,
                conditional_throughput_fps: Some(l),
                tester_limited: tl,
            };
            let mut t = sample_run().tests[0].clone();
            t.id = "phy2phy_ndrpdr".into();
            t.vswitch = dev.into();
            t.frame_size = 64;
            t.line = crate::LineRate::ten_gig(64);
            t.frame_mix = None;
            t.scale = None;
            t.outcome = Outcome::Mlrsearch(MlrResult {
                goals: vec![
                    goal(SearchGoal::ndr(), ndr, false),
                    goal(SearchGoal::pdr(), 2.0 * ndr, limited),
                ],
                trials: Vec::new(),
                trial_seconds: 0.0,
                tester_ceiling_fps: None,
                repeated: None,
            });
            t
        };
        let mut run = sample_run();
        run.tests = vec![
            rec("testpmd-io", 0.94e6, false),
            rec("vecswitch", 1.0e6, true),
            rec("testpmd-io", 5.75e6, true),
            rec("testpmd-io", 5.04e6, true),
        ];
        let s = summary(&run);
        let col = |name: &str| s.header.iter().position(|h| h == name).unwrap();
        let (ndr, pdr) = (
            col("phy2phy_ndrpdr NDR Mfps (% of line) [min, max]"),
            col("phy2phy_ndrpdr PDR Mfps (% of line) [min, max]"),
        );
        assert_eq!(s.rows.len(), 2, "{:?}", s.rows);
        let t = s.rows.iter().find(|r| r[1] == "testpmd-io").unwrap();
        assert_eq!(t[ndr], "5.040 (33.9 %) [0.940, 5.750]");
        assert_eq!(
            t[pdr],
            format!("10.080 (67.7 %) [1.880, 11.500]{TESTER_MARK}")
        );
        let v = s.rows.iter().find(|r| r[1] == "vecswitch").unwrap();
        assert_eq!(v[ndr], "1.000 (6.7 %)");
        assert!(s.tester_limited);
        assert!(s.rows.iter().all(|r| r.len() == s.header.len()));
    }

    #[test]
    fn settings_say_resolution_duration_and_policy() {
        let mut run = sample_run();
        let suite = crate::suite::Suite::parse(
            "name = \"x\"\ntester_tolerance_percent = 1\nframe_sizes = [64, \"imix\"]\n[[dut]]\nname = \"a\"\ntopology = \"phy2phy-memif\"\n\
             [[test]]\nprocedure = \"throughput\"\nid = \"t\"\ntrial_duration_s = 1\nresolution_percent = 2\nsearch_max = \"generator-limit\"\n\
             [[test]]\nprocedure = \"throughput\"\nid = \"w\"\npolicy = \"worst-of-3\"\nframe_sizes = [64]\n",
        )
        .unwrap();
        run.provenance.config = Some(serde_json::to_value(&suite).unwrap());
        let s = settings(&run);
        assert!(
            s[0].starts_with("t: RFC 2544 §26.1") && s[0].contains("1 s trials"),
            "{s:?}"
        );
        assert!(
            s[0].contains(
                "from the generator's calibrated limit down to a resolution of 2 % of it"
            ),
            "{s:?}"
        );
        assert!(
            s[1].contains("worst-of-3") && s[1].contains("only at 64 B"),
            "{s:?}"
        );
        assert!(
            s[2].contains("less than 99 % of the intended frames"),
            "{s:?}"
        );
        // Repeated searches: in rounds when the run recorded them, else in one process.
        let suite = crate::suite::Suite::parse(
            "name = \"x\"\n[[dut]]\nname = \"a\"\ntopology = \"phy2phy-memif\"\n\
             [[test]]\nprocedure = \"mlrsearch\"\nsearches = 3\n",
        )
        .unwrap();
        run.provenance.config = Some(serde_json::to_value(&suite).unwrap());
        assert!(
            settings(&run)[0].contains("3 searches in one device process"),
            "{:?}",
            settings(&run)
        );
        run.tests[0].setup = Some(serde_json::json!({ "round": 1, "rounds": 3 }));
        assert!(
            settings(&run)[0].contains("3 searches, each on a freshly started device"),
            "{:?}",
            settings(&run)
        );
    }
}
