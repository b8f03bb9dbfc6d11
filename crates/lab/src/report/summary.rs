//! The side-by-side summary of a run: one line per topology × device × frame size, one column per
//! throughput test (plain RFC 2544, best-of-N, worst-of-N …), latency at the throughput, and the
//! generator's calibrated limit beside them. Markdown and HTML render the same [`Summary`].

use crate::results::{Cell, RunResults};

/// Marker appended to a figure that is at, or limited by, the generator.
pub const TESTER_MARK: &str = " †";

/// Footnote explaining [`TESTER_MARK`].
pub const TESTER_NOTE: &str = "† tester-limited: the generator could not offer more (its calibrated limit is in the last column); the device may forward more.";

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
        let k = (t.topology.clone().unwrap_or_else(|| t.deployment.clone()), t.vswitch.clone(), t.size_label());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut header = vec!["topology".to_string(), "device".into(), "frame size".into()];
    header.extend(tput_ids.iter().map(|id| format!("{id} Mfps (% of line)")));
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
            let cell = tests.iter().find(|t| &t.id == id && t.outcome.name() == "throughput").map(|t| {
                let r = &t.rows()[0];
                let limited = r.get("tester_limited") == Some(&Cell::Flag(true));
                any_limited |= limited;
                let mark = if limited { TESTER_MARK } else { "" };
                match (r.get("throughput_rx_fps").and_then(Cell::num), r.get("throughput_rx_percent").and_then(Cell::num)) {
                    (Some(x), Some(p)) => format!("{} ({p:.1} %){mark}", mfps(x)),
                    _ => format!("none passed{mark}"),
                }
            });
            row.push(cell.unwrap_or_else(|| "—".into()));
        }
        let lat = tests.iter().find(|t| t.outcome.name() == "latency").and_then(|t| {
            let r = t.rows().into_iter().next()?;
            let avg = r.get("avg_latency_ns").and_then(Cell::num)?;
            let p99 = r.get("p99_latency_ns").and_then(Cell::num)?;
            Some(format!("{:.1} / {:.1}", avg / 1e3, p99 / 1e3))
        });
        row.push(lat.unwrap_or_else(|| "—".into()));
        let limit = tests
            .iter()
            .find_map(|t| t.generator_limit_fps.or_else(|| run.generator.as_ref().and_then(|g| g.limit_for_test(t))));
        row.push(limit.map_or_else(|| "—".into(), mfps));
        rows.push(row);
    }
    Summary { header, rows, tester_limited: any_limited }
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
        assert!(s.header.iter().any(|h| h.starts_with("phy2phy_tput ")), "{:?}", s.header);
        // The demo: 2 devices × 6 sizes.
        assert_eq!(s.rows.len(), 12);
        assert!(s.rows.iter().all(|r| r.len() == s.header.len()));
        // Every line shows the simulated generator's limit (demo.rs) in the last column.
        let last = s.header.len() - 1;
        assert!(s.rows.iter().all(|r| r[last] == mfps(crate::demo::SIM_GENERATOR_LIMIT_FPS)), "{:?}", s.rows);
    }
}
