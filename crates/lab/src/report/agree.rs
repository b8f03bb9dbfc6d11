//! `agree(a, b, tolerance)`: do two runs of the same suite give the same headline figures?
//! (issue 7: "two consecutive `make demo` runs agree within 10 % on every headline figure, or
//! the report shows a confidence interval that says why not").
//!
//! A **headline cell** is one figure a reader quotes: each MLRsearch goal's Relevant Lower Bound
//! (NDR, PDR; the median search's when the search was repeated, with the [min, max] interval of
//! the repeated searches) and each RFC 2544 throughput, per test id, device, topology, frame size,
//! flows and scale point. Cells are matched by that key. For each matched cell the comparison
//! gives the ratio B / A and flags it when
//!
//! - the ratio is outside `1 ± tolerance` (the figures disagree), or
//! - both runs have intervals (repeated searches) and the intervals do not overlap (the
//!   disagreement is beyond the spread each run saw in itself).
//!
//! A cell where either run was tester-limited is marked: its figure is the tester's ceiling, not
//! the device's. Such a cell is compared by the **device's cost** instead when both runs measured
//! it (`device_cost` rows of the same device, topology and frame size at a load both runs
//! offered): busy cycles per packet, the ratio B / A judged against the same tolerance, with
//! each run's idle fraction beside it (BENCHMARKS.md §7). A tester-limited cell without cost rows
//! is still compared by its figure, and says so. Rankings are compared only between cells that
//! were not tester-limited in either run (a tester's ceiling ranks nothing). The summary says how many cells agree, the median and worst disagreement
//! (max(B/A, A/B)), and whether any device ranking flipped (at one topology, frame size and goal,
//! device X beat Y in A and lost to it in B).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::device_cost::DeviceCostRow;
use crate::results::{Outcome, RunResults, TestRecord};

/// One headline figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub fps: f64,
    /// [min, max] over repeated searches (MLRsearch with `searches` > 1).
    pub interval: Option<(f64, f64)>,
    pub tester_limited: bool,
}

/// One headline cell in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellAgreement {
    /// `id device topology size goal` (plus flows and scale when set).
    pub key: String,
    pub a: Figure,
    pub b: Figure,
    /// b / a (infinite when a is 0 and b is not, 1 when both are 0).
    pub ratio: f64,
    pub outside_tolerance: bool,
    /// Both runs have intervals and they do not overlap.
    pub intervals_disjoint: bool,
    /// For a cell tester-limited in either run: the device's cost in both runs, which decides
    /// the cell instead of the figure (module doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostAgreement>,
}

/// A tester-limited cell compared by the device's cost at one offered load both runs measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostAgreement {
    pub load_fps: f64,
    /// Busy cycles per packet of the device's core, A and B (medians of the repetitions).
    pub a_cycles_per_packet: f64,
    pub b_cycles_per_packet: f64,
    /// Idle share of the device's core (1 − busy fraction), A and B, when known.
    pub a_idle: Option<f64>,
    pub b_idle: Option<f64>,
    /// b / a of the cycles per packet.
    pub ratio: f64,
    pub outside_tolerance: bool,
}

impl CellAgreement {
    /// Whether the cell was tester-limited in either run.
    pub fn tester_limited(&self) -> bool {
        self.a.tester_limited || self.b.tester_limited
    }

    pub fn agrees(&self) -> bool {
        match &self.cost {
            Some(c) => !c.outside_tolerance,
            None => !self.outside_tolerance && !self.intervals_disjoint,
        }
    }

    /// max(b/a, a/b) of what decides the cell (the cost for a tester-limited cell that has
    /// one, else the figure): how far apart, whichever is larger (1 = identical).
    pub fn disagreement(&self) -> f64 {
        let r = self.cost.as_ref().map_or(self.ratio, |c| c.ratio);
        if r > 0.0 && r.is_finite() {
            r.max(1.0 / r)
        } else {
            f64::INFINITY
        }
    }
}

/// The frame size of a cost row (`64 B`, `64`, `imix`) as a headline group spells it (`64B`,
/// `imix`).
fn cost_size(label: &str) -> String {
    let l = label.trim();
    match l.trim_end_matches('B').trim().parse::<u32>() {
        Ok(n) => format!("{n}B"),
        Err(_) => l.to_string(),
    }
}

/// The cost comparison of one device, topology and size: the highest load both runs measured
/// with cycles per packet, preferring loads neither run's generator fell short of.
fn compare_cost(
    a: &[DeviceCostRow],
    b: &[DeviceCostRow],
    device: &str,
    topology: &str,
    size: &str,
    tolerance: f64,
) -> Option<CostAgreement> {
    let pick = |rows: &[DeviceCostRow], load: f64| {
        rows.iter()
            .find(|r| {
                r.device == device
                    && r.topology == topology
                    && cost_size(&r.frame_size) == size
                    && (r.intended_fps - load).abs() <= load * 1e-9
                    && r.cycles_per_packet.is_some_and(|c| c > 0.0)
            })
            .cloned()
    };
    let mut pairs: Vec<(DeviceCostRow, DeviceCostRow)> = a
        .iter()
        .filter_map(|r| Some((pick(a, r.intended_fps)?, pick(b, r.intended_fps)?)))
        .collect();
    pairs.sort_by(|x, y| {
        let clean = |p: &(DeviceCostRow, DeviceCostRow)| !p.0.tester_limited && !p.1.tester_limited;
        clean(x)
            .cmp(&clean(y))
            .then(x.0.intended_fps.total_cmp(&y.0.intended_fps))
    });
    let (ra, rb) = pairs.pop()?;
    let (ca, cb) = (ra.cycles_per_packet?, rb.cycles_per_packet?);
    let ratio = cb / ca;
    Some(CostAgreement {
        load_fps: ra.intended_fps,
        a_cycles_per_packet: ca,
        b_cycles_per_packet: cb,
        a_idle: ra.busy_fraction.map(|f| (1.0 - f).max(0.0)),
        b_idle: rb.busy_fraction.map(|f| (1.0 - f).max(0.0)),
        ratio,
        outside_tolerance: (ratio - 1.0).abs() > tolerance,
    })
}

/// A ranking that flipped: at one cell group, `winner_a` beat `winner_b` in A, the reverse in B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flip {
    /// `topology size goal`.
    pub group: String,
    pub winner_a: String,
    pub winner_b: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Relative tolerance (0.10 = ±10 %).
    pub tolerance: f64,
    pub cells: Vec<CellAgreement>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub flips: Vec<Flip>,
}

/// Cell key → (device, group, figure, (topology, size)).
type Headlines = BTreeMap<String, (String, String, Figure, (String, String))>;

fn headlines(run: &RunResults) -> Headlines {
    let mut out = BTreeMap::new();
    for t in &run.tests {
        for (goal, fig) in figures(t) {
            let topo = t.topology.clone().unwrap_or_else(|| t.deployment.clone());
            let size = t
                .frame_mix
                .clone()
                .unwrap_or_else(|| format!("{}B", t.frame_size));
            let mut group = format!("{} {topo} {size} {goal}", t.id);
            if let Some(f) = t.flows.filter(|&f| f != 1) {
                let _ = write!(group, " flows={f}");
            }
            if let Some(s) = t.scale {
                let _ = write!(group, " scale={s}");
            }
            let key = format!("{} {}", t.vswitch, group);
            out.insert(
                key,
                (t.vswitch.clone(), group, fig, (topo.clone(), size.clone())),
            );
        }
    }
    out
}

/// The headline figures of one test record: (goal name, figure).
fn figures(t: &TestRecord) -> Vec<(String, Figure)> {
    match &t.outcome {
        Outcome::Mlrsearch(r) => r
            .goals
            .iter()
            .filter_map(|g| {
                let spread = r
                    .repeated
                    .as_ref()
                    .and_then(|rep| rep.goals.iter().find(|s| s.name == g.goal.name));
                let fps = spread
                    .and_then(|s| s.median_fps)
                    .or(g.relevant_lower_bound_fps)?;
                let interval = spread.and_then(|s| Some((s.min_fps?, s.max_fps?)));
                Some((
                    g.goal.name.clone(),
                    Figure {
                        fps,
                        interval,
                        tester_limited: g.tester_limited,
                    },
                ))
            })
            .collect(),
        Outcome::Throughput(r) => r
            .throughput_fps
            .map(|fps| {
                vec![(
                    "throughput".to_string(),
                    Figure {
                        fps,
                        interval: None,
                        tester_limited: r.tester_limited,
                    },
                )]
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Compares the headline cells of `a` and `b` at relative `tolerance` (0.10 = ±10 %).
pub fn agree(a: &RunResults, b: &RunResults, tolerance: f64) -> Agreement {
    let (ha, hb) = (headlines(a), headlines(b));
    let mut cells = Vec::new();
    for (key, (dev, _, fa, (topo, size))) in &ha {
        let Some((_, _, fb, _)) = hb.get(key) else {
            continue;
        };
        let ratio = if fa.fps == 0.0 {
            if fb.fps == 0.0 {
                1.0
            } else {
                f64::INFINITY
            }
        } else {
            fb.fps / fa.fps
        };
        let intervals_disjoint = match (fa.interval, fb.interval) {
            (Some((amin, amax)), Some((bmin, bmax))) => amax < bmin || bmax < amin,
            _ => false,
        };
        cells.push(CellAgreement {
            key: key.clone(),
            a: fa.clone(),
            b: fb.clone(),
            ratio,
            outside_tolerance: (ratio - 1.0).abs() > tolerance,
            intervals_disjoint,
            cost: if fa.tester_limited || fb.tester_limited {
                compare_cost(&a.device_cost, &b.device_cost, dev, topo, size, tolerance)
            } else {
                None
            },
        });
    }
    // Rankings: per group, every pair of devices present in both runs and not tester-limited.
    let mut flips = Vec::new();
    let mut groups: BTreeMap<&str, Vec<(&str, f64, f64)>> = BTreeMap::new();
    for (key, (dev, group, fa, _)) in &ha {
        if let Some((_, _, fb, _)) = hb.get(key) {
            if fa.tester_limited || fb.tester_limited {
                continue;
            }
            groups
                .entry(group.as_str())
                .or_default()
                .push((dev.as_str(), fa.fps, fb.fps));
        }
    }
    for (group, devs) in groups {
        for (i, x) in devs.iter().enumerate() {
            for y in &devs[i + 1..] {
                let (da, db) = (x.1 - y.1, x.2 - y.2);
                if da * db < 0.0 {
                    let (wa, wb) = if da > 0.0 { (x.0, y.0) } else { (y.0, x.0) };
                    flips.push(Flip {
                        group: group.to_string(),
                        winner_a: wa.to_string(),
                        winner_b: wb.to_string(),
                    });
                }
            }
        }
    }
    Agreement {
        tolerance,
        cells,
        only_in_a: ha
            .keys()
            .filter(|k| !hb.contains_key(*k))
            .cloned()
            .collect(),
        only_in_b: hb
            .keys()
            .filter(|k| !ha.contains_key(*k))
            .cloned()
            .collect(),
        flips,
    }
}

impl Agreement {
    pub fn agreeing(&self) -> usize {
        self.cells.iter().filter(|c| c.agrees()).count()
    }

    pub fn all_agree(&self) -> bool {
        self.agreeing() == self.cells.len() && self.flips.is_empty()
    }

    /// Median of the cells' disagreement (max(B/A, A/B)); `None` without cells.
    pub fn median_disagreement(&self) -> Option<f64> {
        let mut d: Vec<f64> = self.cells.iter().map(|c| c.disagreement()).collect();
        d.sort_by(f64::total_cmp);
        d.get(d.len().saturating_sub(1) / 2).copied()
    }

    pub fn worst(&self) -> Option<&CellAgreement> {
        self.cells
            .iter()
            .max_by(|x, y| x.disagreement().total_cmp(&y.disagreement()))
    }

    /// A plain-text report (also valid Markdown).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let pct = self.tolerance * 100.0;
        let _ = writeln!(s, "# Agreement of two runs (±{pct:.0} %)\n");
        let _ = writeln!(
            s,
            "{} of {} headline cells agree within ±{pct:.0} % (and, where both runs repeated \
             the search, with overlapping intervals).",
            self.agreeing(),
            self.cells.len()
        );
        if let (Some(m), Some(w)) = (self.median_disagreement(), self.worst()) {
            let _ = writeln!(
                s,
                "Median disagreement {m:.3}×, worst {:.3}× ({}).",
                w.disagreement(),
                w.key
            );
        }
        if self.flips.is_empty() {
            let _ = writeln!(s, "No ranking flipped.");
        } else {
            for f in &self.flips {
                let _ = writeln!(
                    s,
                    "Ranking flipped at {}: {} won in A, {} in B.",
                    f.group, f.winner_a, f.winner_b
                );
            }
        }
        let _ = writeln!(
            s,
            "\n| cell | A (Mfps) | B (Mfps) | B/A | |\n|---|---|---|---|---|"
        );
        let fig = |f: &Figure| {
            let mut t = format!("{:.4}", f.fps / 1e6);
            if let Some((lo, hi)) = f.interval {
                let _ = write!(t, " [{:.4}, {:.4}]", lo / 1e6, hi / 1e6);
            }
            if f.tester_limited {
                t.push_str(" (tester-limited)");
            }
            t
        };
        for c in &self.cells {
            let mut flags = Vec::new();
            if c.outside_tolerance {
                flags.push(format!("outside ±{pct:.0} %"));
            }
            if c.intervals_disjoint {
                flags.push("intervals do not overlap".to_string());
            }
            let idle =
                |i: Option<f64>| i.map_or("—".to_string(), |i| format!("{:.0} %", i * 100.0));
            let flag = match (&c.cost, c.tester_limited()) {
                (Some(k), _) => format!(
                    "{}: tester-limited, compared by device cost at {:.0} fps: {:.0} → {:.0} \
                     cycles/packet (B/A {:.3}), idle {} → {}",
                    if k.outside_tolerance {
                        format!("**cost outside ±{pct:.0} %**")
                    } else {
                        "ok".to_string()
                    },
                    k.load_fps,
                    k.a_cycles_per_packet,
                    k.b_cycles_per_packet,
                    k.ratio,
                    idle(k.a_idle),
                    idle(k.b_idle)
                ),
                (None, tl) => {
                    let mut f = if flags.is_empty() {
                        "ok".to_string()
                    } else {
                        format!("**{}**", flags.join(", "))
                    };
                    if tl {
                        f.push_str(" (tester-limited, no device cost to compare)");
                    }
                    f
                }
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.3} | {flag} |",
                c.key,
                fig(&c.a),
                fig(&c.b),
                c.ratio
            );
        }
        for (title, list) in [
            ("Only in A", &self.only_in_a),
            ("Only in B", &self.only_in_b),
        ] {
            if !list.is_empty() {
                let _ = writeln!(s, "\n## {title}\n");
                for k in list {
                    let _ = writeln!(s, "- {k}");
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::mlrsearch::{GoalResult, GoalSpread, MlrResult, Repeated, SearchGoal};
    use crate::results::{Provenance, TestRecord};
    use crate::LineRate;

    fn record(dev: &str, ndr: (f64, f64, f64), pdr: f64) -> TestRecord {
        let goal = |g: SearchGoal, l: f64| GoalResult {
            goal: g,
            relevant_lower_bound_fps: Some(l),
            relevant_upper_bound_fps: Some(l * 1.05),
            conditional_throughput_fps: Some(l),
            tester_limited: false,
        };
        let r = MlrResult {
            goals: vec![goal(SearchGoal::ndr(), ndr.1), goal(SearchGoal::pdr(), pdr)],
            trials: Vec::new(),
            trial_seconds: 0.0,
            tester_ceiling_fps: None,
            repeated: Some(Repeated {
                searches: 2,
                goals: vec![GoalSpread {
                    name: "NDR".into(),
                    lower_bounds_fps: vec![Some(ndr.0), Some(ndr.2)],
                    conditional_throughputs_fps: vec![Some(ndr.0), Some(ndr.2)],
                    median_fps: Some(ndr.1),
                    min_fps: Some(ndr.0),
                    max_fps: Some(ndr.2),
                }],
            }),
        };
        TestRecord {
            id: "phy2phy_ndrpdr".into(),
            description: String::new(),
            deployment: "phy2phy".into(),
            vswitch: dev.into(),
            traffic_type: "udp".into(),
            frame_size: 64,
            line: LineRate::new(10e9, 64, 1).unwrap(),
            bidirectional: false,
            flows: Some(1),
            scale: None,
            setup: None,
            frame_mix: None,
            topology: Some("phy2phy-memif".into()),
            generator_limit_fps: None,
            outcome: Outcome::Mlrsearch(r),
        }
    }

    fn run(tests: Vec<TestRecord>) -> RunResults {
        let mut r = RunResults::new(Provenance::collect(vec!["test".into()], None));
        r.tests = tests;
        r
    }

    #[test]
    fn ratios_tolerance_intervals_and_flips_on_fixed_inputs() {
        // vecswitch: NDR 1.00 [0.95, 1.02] then 1.08 [1.05, 1.10]: within 10 % but the intervals
        // do not overlap. PDR 2.0 then 2.1: within. testpmd: NDR 1.2 [1.1, 1.3] then 0.9
        // [0.85, 1.0]: outside 10 %, and the 64 B NDR ranking flipped (testpmd won A, vecswitch B).
        let a = run(vec![
            record("vecswitch", (0.95e6, 1.0e6, 1.02e6), 2.0e6),
            record("testpmd", (1.1e6, 1.2e6, 1.3e6), 2.0e6),
        ]);
        let b = run(vec![
            record("vecswitch", (1.05e6, 1.08e6, 1.10e6), 2.1e6),
            record("testpmd", (0.85e6, 0.9e6, 1.0e6), 2.0e6),
        ]);
        let g = agree(&a, &b, 0.10);
        assert_eq!(g.cells.len(), 4);
        let cell = |k: &str| g.cells.iter().find(|c| c.key == k).unwrap();
        let v = cell("vecswitch phy2phy_ndrpdr phy2phy-memif 64B NDR");
        assert!((v.ratio - 1.08).abs() < 1e-9, "{}", v.ratio);
        assert!(!v.outside_tolerance && v.intervals_disjoint && !v.agrees());
        let vp = cell("vecswitch phy2phy_ndrpdr phy2phy-memif 64B PDR");
        assert!(vp.agrees() && vp.a.interval.is_none());
        let t = cell("testpmd phy2phy_ndrpdr phy2phy-memif 64B NDR");
        assert!((t.ratio - 0.75).abs() < 1e-9 && t.outside_tolerance);
        // [1.1, 1.3] and [0.85, 1.0] do not overlap either.
        assert!(t.intervals_disjoint);
        assert_eq!(g.agreeing(), 2);
        assert!(!g.all_agree());
        assert_eq!(
            g.flips,
            vec![Flip {
                group: "phy2phy_ndrpdr phy2phy-memif 64B NDR".into(),
                winner_a: "testpmd".into(),
                winner_b: "vecswitch".into(),
            }]
        );
        // Disagreements: 1.0, 1.05, 1.08, 1.333: median (lower) 1.05, worst testpmd NDR.
        assert!((g.median_disagreement().unwrap() - 1.05).abs() < 1e-9);
        assert_eq!(g.worst().unwrap().key, t.key);
        let text = g.render();
        assert!(text.contains("2 of 4 headline cells agree"), "{text}");
        assert!(text.contains("intervals do not overlap") && text.contains("outside ±10 %"));
        assert!(text.contains("Ranking flipped at phy2phy_ndrpdr phy2phy-memif 64B NDR"));
        // A run agrees with itself; a cell only in one run is listed, not compared.
        let same = agree(&a, &a, 0.10);
        assert!(same.all_agree() && same.cells.len() == 4);
        let fewer = agree(&a, &run(vec![a.tests[0].clone()]), 0.10);
        assert_eq!(fewer.cells.len(), 2);
        assert_eq!(fewer.only_in_a.len(), 2);
    }

    fn cost_row(dev: &str, topo: &str, load: f64, cycles: f64, busy: f64) -> DeviceCostRow {
        DeviceCostRow {
            device: dev.into(),
            topology: topo.into(),
            frame_size: "64 B".into(),
            intended_fps: load,
            offered_fps: load,
            received_fps: load,
            device_rx_fps: Some(load),
            busy_fraction: Some(busy),
            cycles_per_packet: Some(cycles),
            estimated_capacity_fps: None,
            idle_poll_fraction: None,
            method: "test".into(),
            repetitions: 3,
            tester_limited: false,
            note: None,
        }
    }

    /// A record at a veth topology whose NDR and PDR were the tester's ceiling.
    fn limited(dev: &str, ndr: f64) -> TestRecord {
        let mut r = record(dev, (ndr, ndr, ndr), ndr);
        r.topology = Some("phy2phy-veth".into());
        if let Outcome::Mlrsearch(m) = &mut r.outcome {
            for g in m.goals.iter_mut() {
                g.tester_limited = true;
            }
        }
        r
    }

    #[test]
    fn tester_limited_cells_are_compared_by_device_cost() {
        // Two veth devices, tester-limited in both runs: their NDR figures are the tester's
        // ceiling and swing 1.5x (and "flip"); their cost per packet at 50 kfps is what decides.
        let mut a = run(vec![limited("linux-bridge", 200e3), limited("ovs", 150e3)]);
        let mut b = run(vec![limited("linux-bridge", 100e3), limited("ovs", 160e3)]);
        a.device_cost = vec![
            cost_row("linux-bridge", "phy2phy-veth", 20e3, 9_000.0, 0.10),
            cost_row("linux-bridge", "phy2phy-veth", 50e3, 6_000.0, 0.20),
            cost_row("ovs", "phy2phy-veth", 50e3, 12_000.0, 0.40),
        ];
        b.device_cost = vec![
            cost_row("linux-bridge", "phy2phy-veth", 20e3, 8_000.0, 0.09),
            cost_row("linux-bridge", "phy2phy-veth", 50e3, 6_300.0, 0.21),
            // OVS costs 1.25x more in B: its cell disagrees, by its cost.
            cost_row("ovs", "phy2phy-veth", 50e3, 15_000.0, 0.50),
        ];
        let g = agree(&a, &b, 0.10);
        let cell = |k: &str| g.cells.iter().find(|c| c.key == k).unwrap();
        let lb = cell("linux-bridge phy2phy_ndrpdr phy2phy-veth 64B NDR");
        assert!(lb.tester_limited() && lb.outside_tolerance, "{lb:?}");
        let k = lb.cost.as_ref().expect("compared by cost");
        // The highest load both runs measured: 50 kfps, 6,000 → 6,300 cycles/packet.
        assert_eq!(k.load_fps, 50e3);
        assert!(
            (k.ratio - 1.05).abs() < 1e-9 && !k.outside_tolerance,
            "{k:?}"
        );
        assert!((k.a_idle.unwrap() - 0.8).abs() < 1e-9);
        assert!(lb.agrees() && (lb.disagreement() - 1.05).abs() < 1e-9);
        let o = cell("ovs phy2phy_ndrpdr phy2phy-veth 64B NDR");
        assert!(
            !o.agrees() && (o.disagreement() - 1.25).abs() < 1e-9,
            "{o:?}"
        );
        // The tester's ceilings rank nothing: no flip although the figures crossed.
        assert!(g.flips.is_empty(), "{:?}", g.flips);
        let text = g.render();
        assert!(
            text.contains("compared by device cost at 50000 fps: 6000 → 6300 cycles/packet"),
            "{text}"
        );
        assert!(text.contains("**cost outside ±10 %**"), "{text}");
        // Without cost rows the tester-limited cell is compared by its figure, and says so.
        b.device_cost.clear();
        let g = agree(&a, &b, 0.10);
        let lb = g
            .cells
            .iter()
            .find(|c| c.key == "linux-bridge phy2phy_ndrpdr phy2phy-veth 64B NDR")
            .unwrap();
        assert!(lb.cost.is_none() && !lb.agrees());
        assert!(g.render().contains("no device cost to compare"));
        // Rows of another size or topology never stand in.
        assert_eq!(cost_size("64 B"), "64B");
        assert_eq!(cost_size("64"), "64B");
        assert_eq!(cost_size("imix"), "imix");
    }
}
