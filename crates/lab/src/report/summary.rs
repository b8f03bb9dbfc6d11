//! The side-by-side summary of a run: one line per topology × device × frame size, one column per
//! throughput test (plain RFC 2544, best-of-N, worst-of-N …), latency at the throughput, and the
//! generator's calibrated limit beside them. Markdown and HTML render the same [`Summary`].

use crate::results::{Cell, RunResults};

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
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for t in run.tests.iter().filter(|t| t.scale.is_none()) {
        if t.outcome.name() == "throughput" && !tput_ids.contains(&t.id) {
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

/// The device-cost rows of one device, topology and size: `6500 (75 % idle) at 30 kfps`, one per
/// load, `—` when none.
fn cost_cell(run: &RunResults, topo: &str, dev: &str, size: &str) -> String {
    let norm = |l: &str| l.replace(' ', "");
    let cells: Vec<String> = run
        .device_cost
        .iter()
        .filter(|r| r.device == dev && r.topology == topo && norm(&r.frame_size) == norm(size))
        .map(|r| {
            let cpp = r
                .cycles_per_packet
                .map_or_else(|| "—".to_string(), |c| format!("{c:.0}"));
            let idle = r
                .idle_fraction()
                .map(|i| format!(" ({:.0} % idle)", i * 100.0))
                .unwrap_or_default();
            format!("{cpp}{idle} at {:.0} kfps", r.intended_fps / 1e3)
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
    }
}
