//! `agree(a, b, tolerance)`: do two runs of the same suite give the same headline figures?
//! (issue 7: "two consecutive `make demo` runs agree within 10 % on every headline figure, or
//! the report shows a confidence interval that says why not").
//!
//! A **headline cell** is one figure a reader quotes: each MLRsearch goal's Relevant Lower Bound
//! (NDR, PDR) and each RFC 2544 throughput, per test id, device, topology, frame size, flows and
//! scale point ([`headlines`]). A run can measure a cell several times: repeated searches in one
//! record, and **rounds** — the same test of the same device on a freshly started device
//! (`Suite::blocks`), which are separate records. All of a cell's searches are merged: its
//! figure is their lower median (a search without a lower bound counting as the lowest), its
//! interval their [min, max], its tester-limited flag that of the median search. Cells are
//! matched by key. For each matched cell the comparison gives the ratio B / A and a [`Verdict`]:
//!
//! - **agrees**: the ratio is within `1 ± tolerance` — issue 7's bar. Where both runs have
//!   intervals that do not overlap the cell still agrees, and says so ("within ±10 %, intervals
//!   do not overlap": each run repeated itself more closely than the two runs repeat each other);
//! - **within the intervals**: the ratio is outside `1 ± tolerance`, but the runs' own repeats
//!   spread that far: one run's interval overlaps the other's (or holds its figure). The figure
//!   does not repeat to the tolerance inside one run either, and the interval says so and by how
//!   much (issue 7: "or the report shows a confidence interval that says why not");
//! - **disagrees**: otherwise.
//!
//! A cell where either run was tester-limited is marked: its figure is the tester's ceiling, not
//! the device's. Such a cell is compared by the **device's cost** instead when both runs measured
//! it at an **equal load** (`device_cost` rows of the same device, topology, frame size and
//! intended load, merged over rounds by [`crate::device_cost::merge_rows`]): busy cycles per
//! packet, the ratio B / A of the medians judged as above with the rows' [min, max] as the
//! intervals, each run's idle fraction beside it (BENCHMARKS.md §7). Cost per packet depends on
//! the load (batching), so costs at different loads are never compared: the cell says the
//! loads differed and is compared by its figure. A tester-limited cell without cost rows is
//! compared by its figure too, and says so. Rankings are compared only between cells that were
//! not tester-limited in either run (a tester's ceiling ranks nothing). The summary says how
//! many cells agree, how many differ within their intervals, the median and worst disagreement
//! (max(B/A, A/B)), and whether any device ranking flipped (at one topology, frame size and goal,
//! device X beat Y in A and lost to it in B).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::device_cost::{merge_rows, size_key, MergedCost};
use crate::procedures::mlrsearch::lower_median_index;
use crate::results::{Outcome, RunResults, TestRecord};

/// One headline figure of one run: the median of every search the run made of the cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub fps: f64,
    /// [min, max] of the lower bounds over the searches (repeated searches and rounds), when
    /// there was more than one.
    pub interval: Option<(f64, f64)>,
    pub tester_limited: bool,
    /// Searches merged (1: a single search or throughput test).
    pub searches: usize,
}

impl Figure {
    /// The interval, or the figure itself as a zero-width one.
    fn span(&self) -> (f64, f64) {
        self.interval.unwrap_or((self.fps, self.fps))
    }
}

/// A headline cell of one run ([`headlines`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    pub device: String,
    /// `id topology size goal` (plus flows and scale when set): the cell without the device.
    pub group: String,
    pub id: String,
    /// `NDR`, `PDR`, `throughput`.
    pub goal: String,
    pub topology: String,
    /// `64B`, `imix`.
    pub size: String,
    pub scale: Option<u64>,
    /// The record's line rate in frames/s (for "% of line").
    pub line_fps: f64,
    pub figure: Figure,
}

/// How two runs' figures (or costs) of one cell compare (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Agrees,
    WithinIntervals,
    Disagrees,
}

/// The verdict for two figures with optional intervals, from their ratio.
fn verdict(
    ratio: f64,
    tolerance: f64,
    a: (f64, f64),
    b: (f64, f64),
    a_interval: bool,
    b_interval: bool,
) -> Verdict {
    let overlap = a.0 <= b.1 && b.0 <= a.1;
    let within = (ratio - 1.0).abs() <= tolerance;
    match (within, a_interval && b_interval) {
        (true, _) => Verdict::Agrees,
        (false, _) if (a_interval || b_interval) && overlap => Verdict::WithinIntervals,
        (false, _) => Verdict::Disagrees,
    }
}

/// b / a (infinite when a is 0 and b is not, 1 when both are 0).
fn ratio(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        b / a
    }
}

/// One headline cell in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellAgreement {
    /// `device id topology size goal` (plus flows and scale when set).
    pub key: String,
    pub a: Figure,
    pub b: Figure,
    /// b / a (infinite when a is 0 and b is not, 1 when both are 0).
    pub ratio: f64,
    pub outside_tolerance: bool,
    /// Both runs have intervals and they do not overlap.
    pub intervals_disjoint: bool,
    /// The figures' verdict (the cost's decides a cell that has [`CellAgreement::cost`]).
    pub figure_verdict: Verdict,
    /// For a cell tester-limited in either run: the device's cost in both runs at an equal
    /// load, which decides the cell instead of the figure (module doc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostAgreement>,
    /// A tester-limited cell whose runs measured the device's cost only at different loads
    /// (A's loads, B's loads): not compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_loads_differ: Option<(Vec<f64>, Vec<f64>)>,
    /// B / A of the generator's own calibrated limit on this cell's topology and frame size
    /// (the loop without a device), when both runs calibrated it ([`CellAgreement::host_moved`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tester_ratio: Option<f64>,
}

/// A tester-limited cell compared by the device's cost at one offered load both runs measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostAgreement {
    pub load_fps: f64,
    /// Busy cycles per packet of the device's core, A and B (medians over rounds and
    /// repetitions).
    pub a_cycles_per_packet: f64,
    pub b_cycles_per_packet: f64,
    /// [min, max] of the rows merged, when more than one.
    pub a_range: Option<(f64, f64)>,
    pub b_range: Option<(f64, f64)>,
    /// Idle share of the device's core (1 − busy fraction), A and B, when known.
    pub a_idle: Option<f64>,
    pub b_idle: Option<f64>,
    /// b / a of the cycles per packet.
    pub ratio: f64,
    pub outside_tolerance: bool,
    pub verdict: Verdict,
}

impl CellAgreement {
    /// Whether the cell was tester-limited in either run.
    pub fn tester_limited(&self) -> bool {
        self.a.tester_limited || self.b.tester_limited
    }

    /// What decides the cell: its cost where compared, else its figures.
    pub fn verdict(&self) -> Verdict {
        self.cost
            .as_ref()
            .map_or(self.figure_verdict, |c| c.verdict)
    }

    pub fn agrees(&self) -> bool {
        self.verdict() == Verdict::Agrees
    }

    /// A tester-limited cell that disagrees, on a topology and size where the tester *alone*
    /// (its calibrated limit, no device in the loop) moved beyond the tolerance between the runs,
    /// in the direction and by no more than the cell moved: the host's own path (kernel, CPU,
    /// the hypervisor's neighbours) changed between the runs, which no repeat inside one run can
    /// show. A tester that got slower lowers a tester-limited figure and raises the device's
    /// cycles per packet on the same kernel path.
    pub fn host_moved(&self, tolerance: f64) -> bool {
        let Some(t) = self.tester_ratio.filter(|t| *t > 0.0 && t.is_finite()) else {
            return false;
        };
        if self.verdict() != Verdict::Disagrees || !self.tester_limited() {
            return false;
        }
        let shift = t.max(1.0 / t);
        if shift <= 1.0 + tolerance {
            return false;
        }
        // The direction the host's slowdown (t < 1) moves what decides the cell.
        let (r, same_direction) = match &self.cost {
            Some(c) => (c.ratio, (t < 1.0) == (c.ratio > 1.0)),
            None => (self.ratio, (t < 1.0) == (self.ratio < 1.0)),
        };
        let moved = if r > 0.0 && r.is_finite() {
            r.max(1.0 / r)
        } else {
            return false;
        };
        same_direction && moved <= shift * (1.0 + tolerance)
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

/// The merged cost rows of one device, topology and size that have a cost per packet.
fn costs_of<'r>(
    rows: &'r [MergedCost],
    device: &str,
    topology: &str,
    size: &str,
) -> Vec<&'r MergedCost> {
    rows.iter()
        .filter(|r| {
            r.device == device
                && r.topology == topology
                && size_key(&r.frame_size) == size
                && r.cycles_per_packet.is_some_and(|c| c > 0.0)
        })
        .collect()
}

/// The cost comparison of one device, topology and size at the highest load both runs
/// measured, preferring loads neither run's generator fell short of; `Err((A's loads, B's
/// loads))` when both measured the cell but at no equal load.
fn compare_cost(
    a: &[MergedCost],
    b: &[MergedCost],
    device: &str,
    topology: &str,
    size: &str,
    tolerance: f64,
) -> Result<Option<CostAgreement>, (Vec<f64>, Vec<f64>)> {
    let (ca, cb) = (
        costs_of(a, device, topology, size),
        costs_of(b, device, topology, size),
    );
    let equal = |x: f64, y: f64| (x - y).abs() <= x.abs() * 1e-9;
    let mut pairs: Vec<(&MergedCost, &MergedCost)> = ca
        .iter()
        .filter_map(|ra| {
            cb.iter()
                .find(|rb| equal(ra.intended_fps, rb.intended_fps))
                .map(|rb| (*ra, *rb))
        })
        .collect();
    if pairs.is_empty() {
        if ca.is_empty() || cb.is_empty() {
            return Ok(None);
        }
        let loads = |v: &[&MergedCost]| v.iter().map(|r| r.intended_fps).collect();
        return Err((loads(&ca), loads(&cb)));
    }
    pairs.sort_by(|x, y| {
        let clean = |p: &(&MergedCost, &MergedCost)| !p.0.tester_limited && !p.1.tester_limited;
        clean(x)
            .cmp(&clean(y))
            .then(x.0.intended_fps.total_cmp(&y.0.intended_fps))
    });
    let Some((ra, rb)) = pairs.pop() else {
        return Ok(None);
    };
    let (Some(pa), Some(pb)) = (ra.cycles_per_packet, rb.cycles_per_packet) else {
        return Ok(None);
    };
    let r = ratio(pa, pb);
    Ok(Some(CostAgreement {
        load_fps: ra.intended_fps,
        a_cycles_per_packet: pa,
        b_cycles_per_packet: pb,
        a_range: ra.range,
        b_range: rb.range,
        a_idle: ra.idle_fraction(),
        b_idle: rb.idle_fraction(),
        ratio: r,
        outside_tolerance: (r - 1.0).abs() > tolerance,
        verdict: verdict(
            r,
            tolerance,
            ra.range.unwrap_or((pa, pa)),
            rb.range.unwrap_or((pb, pb)),
            ra.range.is_some(),
            rb.range.is_some(),
        ),
    }))
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

/// The cell of `t` for `goal`: (key, group, topology, size).
fn cell_of(t: &TestRecord, goal: &str) -> (String, String, String, String) {
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
    (format!("{} {group}", t.vswitch), group, topo, size)
}

/// The key of `t`'s cell for `goal` in [`headlines`] (`device id topology size goal`).
pub fn headline_key(t: &TestRecord, goal: &str) -> String {
    cell_of(t, goal).0
}

/// One search of a cell: its lower bound (none when even the min load failed) and whether it
/// was tester-limited.
type Search = (Option<f64>, bool);

/// Every search of one record per goal: (goal, its searches).
fn searches(t: &TestRecord) -> Vec<(String, Vec<Search>)> {
    match &t.outcome {
        Outcome::Mlrsearch(r) => r
            .goals
            .iter()
            .map(|g| {
                let lbs = r
                    .repeated
                    .as_ref()
                    .and_then(|rep| rep.goals.iter().find(|s| s.name == g.goal.name))
                    .map_or_else(
                        || vec![g.relevant_lower_bound_fps],
                        |s| s.lower_bounds_fps.clone(),
                    );
                // A repeated record keeps the median search's flag (mlrsearch_repeated).
                let flagged = lbs.into_iter().map(|l| (l, g.tester_limited)).collect();
                (g.goal.name.clone(), flagged)
            })
            .collect(),
        Outcome::Throughput(r) => vec![(
            "throughput".to_string(),
            vec![(r.throughput_fps, r.tester_limited)],
        )],
        _ => Vec::new(),
    }
}

/// The headline cells of one run by key, each merged over the records of the cell (rounds) and
/// their repeated searches (module doc). A cell whose median search found nothing is left out.
pub fn headlines(run: &RunResults) -> BTreeMap<String, Headline> {
    let mut acc: BTreeMap<String, (Headline, Vec<Search>)> = BTreeMap::new();
    for t in &run.tests {
        for (goal, found) in searches(t) {
            let (key, group, topology, size) = cell_of(t, &goal);
            acc.entry(key)
                .or_insert_with(|| {
                    let h = Headline {
                        device: t.vswitch.clone(),
                        group,
                        id: t.id.clone(),
                        goal: goal.clone(),
                        topology,
                        size,
                        scale: t.scale,
                        line_fps: t.line.max_fps(),
                        figure: Figure {
                            fps: 0.0,
                            interval: None,
                            tester_limited: false,
                            searches: 0,
                        },
                    };
                    (h, Vec::new())
                })
                .1
                .extend(found);
        }
    }
    acc.into_iter()
        .filter_map(|(key, (mut h, found))| {
            let lbs: Vec<Option<f64>> = found.iter().map(|f| f.0).collect();
            let m = lower_median_index(&lbs)?;
            let fps = lbs[m]?;
            let got = || lbs.iter().flatten().copied();
            h.figure = Figure {
                fps,
                interval: (found.len() > 1).then(|| {
                    (
                        got().fold(f64::INFINITY, f64::min),
                        got().fold(f64::NEG_INFINITY, f64::max),
                    )
                }),
                tester_limited: found[m].1,
                searches: found.len(),
            };
            Some((key, h))
        })
        .collect()
}

/// Compares the headline cells of `a` and `b` at relative `tolerance` (0.10 = ±10 %).
/// The generator's calibrated limit of a run for `topology` and `size` (`64B`, `imix`).
fn calibrated(r: &RunResults, topology: &str, size: &str) -> Option<f64> {
    r.generator
        .as_ref()?
        .calibrated_limits
        .iter()
        .find(|c| c.topology.as_deref() == Some(topology) && size_key(&c.size_label()) == size)
        .map(|c| c.max_fps)
}

pub fn agree(a: &RunResults, b: &RunResults, tolerance: f64) -> Agreement {
    let (ha, hb) = (headlines(a), headlines(b));
    let (costs_a, costs_b) = (merge_rows(&a.device_cost), merge_rows(&b.device_cost));
    let mut cells = Vec::new();
    for (key, x) in &ha {
        let Some(y) = hb.get(key) else {
            continue;
        };
        let (fa, fb) = (&x.figure, &y.figure);
        let r = ratio(fa.fps, fb.fps);
        let intervals_disjoint = match (fa.interval, fb.interval) {
            (Some((amin, amax)), Some((bmin, bmax))) => amax < bmin || bmax < amin,
            _ => false,
        };
        let (cost, cost_loads_differ) = if fa.tester_limited || fb.tester_limited {
            match compare_cost(
                &costs_a,
                &costs_b,
                &x.device,
                &x.topology,
                &x.size,
                tolerance,
            ) {
                Ok(c) => (c, None),
                Err(loads) => (None, Some(loads)),
            }
        } else {
            (None, None)
        };
        let tester_ratio = match (
            calibrated(a, &x.topology, &x.size),
            calibrated(b, &x.topology, &x.size),
        ) {
            (Some(la), Some(lb)) if la > 0.0 => Some(lb / la),
            _ => None,
        };
        cells.push(CellAgreement {
            tester_ratio,
            key: key.clone(),
            a: fa.clone(),
            b: fb.clone(),
            ratio: r,
            outside_tolerance: (r - 1.0).abs() > tolerance,
            intervals_disjoint,
            figure_verdict: verdict(
                r,
                tolerance,
                fa.span(),
                fb.span(),
                fa.interval.is_some(),
                fb.interval.is_some(),
            ),
            cost,
            cost_loads_differ,
        });
    }
    // Rankings: per group, every pair of devices present in both runs and not tester-limited.
    let mut flips = Vec::new();
    let mut groups: BTreeMap<&str, Vec<(&str, f64, f64)>> = BTreeMap::new();
    for (key, x) in &ha {
        if let Some(y) = hb.get(key) {
            if x.figure.tester_limited || y.figure.tester_limited {
                continue;
            }
            groups.entry(x.group.as_str()).or_default().push((
                x.device.as_str(),
                x.figure.fps,
                y.figure.fps,
            ));
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

    /// Cells outside the tolerance whose runs' own intervals say why ([`Verdict`]).
    pub fn within_intervals(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.verdict() == Verdict::WithinIntervals)
            .count()
    }

    pub fn all_agree(&self) -> bool {
        self.agreeing() == self.cells.len() && self.flips.is_empty()
    }

    /// Every cell agrees or differs only within the intervals of the runs' own repeats, and no
    /// ranking flipped: issue 7's "agree within 10 %, or the intervals say why not".
    pub fn all_agree_or_explained(&self) -> bool {
        self.agreeing() + self.within_intervals() + self.host_moved() == self.cells.len()
            && self.flips.is_empty()
    }

    /// Cells that disagree where the tester alone moved as much between the runs
    /// ([`CellAgreement::host_moved`]).
    pub fn host_moved(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.host_moved(self.tolerance))
            .count()
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
            "{} of {} headline cells agree within ±{pct:.0} %{}.",
            self.agreeing(),
            self.cells.len(),
            match self
                .cells
                .iter()
                .filter(|c| c.agrees() && c.intervals_disjoint)
                .count()
            {
                0 => String::new(),
                n => format!(
                    " ({n} of them with intervals that do not overlap: each run repeated itself \
                     more closely than the two runs repeat each other)"
                ),
            }
        );
        let within = self.within_intervals();
        if within > 0 {
            let _ = writeln!(
                s,
                "{within} more differ by more than ±{pct:.0} %, within the intervals of the runs' \
                 own repeated searches: the figure does not repeat to ±{pct:.0} % inside one run \
                 either, and its interval says by how much."
            );
        }
        let host = self.host_moved();
        if host > 0 {
            let _ = writeln!(
                s,
                "{host} more disagree, tester-limited, on a topology and size where the tester \
                 alone (its calibrated limit, no device) moved beyond ±{pct:.0} % between the \
                 runs, in the same direction and at least as far as the cell did: the host's own path changed \
                 between the runs, not only the device."
            );
        }
        let _ = writeln!(
            s,
            "{} disagree beyond their intervals{}.",
            self.cells.len() - self.agreeing() - within - host,
            if host > 0 {
                " and beyond the tester's own change"
            } else {
                ""
            }
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
            if f.searches > 1 {
                let _ = write!(t, " ({} searches)", f.searches);
            }
            if f.tester_limited {
                t.push_str(" (tester-limited)");
            }
            t
        };
        let cpp = |c: f64, r: Option<(f64, f64)>| {
            r.map_or_else(
                || format!("{c:.0}"),
                |(lo, hi)| format!("{c:.0} [{lo:.0}, {hi:.0}]"),
            )
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
            let judged = |v: Verdict, what: &str| match v {
                Verdict::Agrees => "ok".to_string(),
                Verdict::WithinIntervals => {
                    format!("{what}outside ±{pct:.0} %, within the runs' intervals")
                }
                Verdict::Disagrees => format!("**{what}outside ±{pct:.0} %**"),
            };
            let flag = match (&c.cost, c.tester_limited()) {
                (Some(k), _) => format!(
                    "{}: tester-limited, compared by device cost at {:.0} fps: {} → {} \
                     cycles/packet (B/A {:.3}), idle {} → {}",
                    judged(k.verdict, "cost "),
                    k.load_fps,
                    cpp(k.a_cycles_per_packet, k.a_range),
                    cpp(k.b_cycles_per_packet, k.b_range),
                    k.ratio,
                    idle(k.a_idle),
                    idle(k.b_idle)
                ),
                (None, tl) => {
                    let mut f = match c.figure_verdict {
                        Verdict::Agrees if c.intervals_disjoint => {
                            format!("ok: within ±{pct:.0} %, intervals do not overlap")
                        }
                        Verdict::Agrees => "ok".to_string(),
                        Verdict::WithinIntervals => {
                            flags.join(", ") + ", within the runs' intervals"
                        }
                        Verdict::Disagrees => format!("**{}**", flags.join(", ")),
                    };
                    match (&c.cost_loads_differ, tl) {
                        (Some((la, lb)), _) => {
                            let l = |v: &[f64]| {
                                v.iter()
                                    .map(|x| format!("{x:.0}"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            };
                            let _ = write!(
                                f,
                                " (tester-limited; device cost measured at different loads, A {} \
                                 fps, B {} fps: not compared)",
                                l(la),
                                l(lb)
                            );
                        }
                        (None, true) => f.push_str(" (tester-limited, no device cost to compare)"),
                        (None, false) => {}
                    }
                    f
                }
            };
            let mut flag = flag;
            if let Some(t) = c.tester_ratio.filter(|t| (t - 1.0).abs() > self.tolerance) {
                let _ = write!(
                    flag,
                    "; the tester alone moved ×{t:.3} on this topology and size{}",
                    if c.host_moved(self.tolerance) {
                        " — explains it"
                    } else {
                        ""
                    }
                );
            }
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
    use crate::device_cost::DeviceCostRow;
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
                searches: 3,
                goals: vec![GoalSpread {
                    name: "NDR".into(),
                    lower_bounds_fps: vec![Some(ndr.0), Some(ndr.1), Some(ndr.2)],
                    conditional_throughputs_fps: vec![Some(ndr.0), Some(ndr.1), Some(ndr.2)],
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
        // Within ±10 %: agrees (issue 7's bar), and says the intervals do not overlap.
        assert!(!v.outside_tolerance && v.intervals_disjoint && v.agrees());
        let vp = cell("vecswitch phy2phy_ndrpdr phy2phy-memif 64B PDR");
        assert!(vp.agrees() && vp.a.interval.is_none());
        let t = cell("testpmd phy2phy_ndrpdr phy2phy-memif 64B NDR");
        assert!((t.ratio - 0.75).abs() < 1e-9 && t.outside_tolerance);
        // [1.1, 1.3] and [0.85, 1.0] do not overlap either.
        assert!(t.intervals_disjoint);
        assert_eq!(g.agreeing(), 3);
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
        assert!(text.contains("3 of 4 headline cells agree"), "{text}");
        assert!(
            text.contains("ok: within ±10 %, intervals do not overlap"),
            "{text}"
        );
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
            round: None,
            load_basis: None,
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
        // Rows at another load never stand in: B measured OVS only at 100 kfps.
        b.device_cost = vec![cost_row("ovs", "phy2phy-veth", 100e3, 12_000.0, 0.80)];
        let g = agree(&a, &b, 0.10);
        let o = g
            .cells
            .iter()
            .find(|c| c.key == "ovs phy2phy_ndrpdr phy2phy-veth 64B NDR")
            .unwrap();
        assert!(o.cost.is_none(), "{o:?}");
        assert_eq!(o.cost_loads_differ, Some((vec![50e3], vec![100e3])));
        assert!(
            g.render().contains(
                "device cost measured at different loads, A 50000 fps, B 100000 fps: not compared"
            ),
            "{}",
            g.render()
        );
    }

    fn with_veth_calibration(mut r: RunResults, fps: f64) -> RunResults {
        r.generator = Some(crate::results::GeneratorInfo {
            name: "test".into(),
            calibrated_limits: vec![crate::results::CalibratedLimit {
                frame_size: 64,
                max_fps: fps,
                mix: None,
                topology: Some("phy2phy-veth".into()),
                method: None,
                latency_floor: None,
            }],
        });
        r
    }

    #[test]
    fn a_tester_that_moved_as_much_explains_a_tester_limited_cell() {
        // The tester alone over veth: 1.185 Mfps in A, 0.931 in B (×0.786, make demo 2026-11-24).
        // OVS's cost rose 1.25× (the same direction: a slower host, more cycles per packet, and
        // less than the tester's 1.27×): explained. The bridge's cost fell 1.25×: not explained.
        let mut a = run(vec![limited("linux-bridge", 200e3), limited("ovs", 150e3)]);
        let mut b = run(vec![limited("linux-bridge", 210e3), limited("ovs", 150e3)]);
        a.device_cost = vec![
            cost_row("linux-bridge", "phy2phy-veth", 50e3, 6_000.0, 0.20),
            cost_row("ovs", "phy2phy-veth", 50e3, 12_000.0, 0.40),
        ];
        b.device_cost = vec![
            cost_row("linux-bridge", "phy2phy-veth", 50e3, 4_800.0, 0.16),
            cost_row("ovs", "phy2phy-veth", 50e3, 15_000.0, 0.50),
        ];
        // Without calibrations nothing is explained.
        let g = agree(&a, &b, 0.10);
        assert_eq!(g.host_moved(), 0);
        assert!(!g.all_agree_or_explained());
        let (a, b) = (
            with_veth_calibration(a, 1.185e6),
            with_veth_calibration(b, 0.931e6),
        );
        let g = agree(&a, &b, 0.10);
        let cell = |k: &str| g.cells.iter().find(|c| c.key == k).unwrap();
        let o = cell("ovs phy2phy_ndrpdr phy2phy-veth 64B NDR");
        assert!((o.tester_ratio.unwrap() - 0.931 / 1.185).abs() < 1e-9);
        assert!(
            o.verdict() == Verdict::Disagrees && o.host_moved(0.10),
            "{o:?}"
        );
        let lb = cell("linux-bridge phy2phy_ndrpdr phy2phy-veth 64B NDR");
        assert!(!lb.host_moved(0.10), "{lb:?}");
        // OVS NDR and PDR explained; the bridge's two cells are not.
        assert_eq!(g.host_moved(), 2);
        assert!(!g.all_agree_or_explained());
        let text = g.render();
        assert!(
            text.contains(
                "2 more disagree, tester-limited, on a topology and size where the tester alone"
            ) && text
                .contains("the tester alone moved ×0.786 on this topology and size — explains it")
                && text.contains(
                    "2 disagree beyond their intervals and beyond the tester's own change"
                ),
            "{text}"
        );
        // A tester that did not move beyond the tolerance explains nothing.
        let g = agree(&a, &with_veth_calibration(b.clone(), 1.1e6), 0.10);
        assert_eq!(g.host_moved(), 0);
    }

    /// One round of `dev`'s 64 B memif NDR search: a single search (no `repeated`).
    fn round(dev: &str, ndr: Option<f64>, tester_limited: bool) -> TestRecord {
        let mut r = record(dev, (1.0, 1.0, 1.0), 2.0e6);
        if let Outcome::Mlrsearch(m) = &mut r.outcome {
            m.repeated = None;
            m.goals[0].relevant_lower_bound_fps = ndr;
            m.goals[0].tester_limited = tester_limited;
        }
        r
    }

    #[test]
    fn rounds_of_one_cell_merge_into_a_median_and_an_interval() {
        // Three rounds of testpmd, each a freshly started device: NDR 0.94, 5.75, 5.04 Mfps
        // (memif's two modes, BENCHMARKS §4). One cell: median 5.04, interval [0.94, 5.75].
        let a = run(vec![
            round("testpmd", Some(0.94e6), false),
            round("vecswitch", Some(2.0e6), false),
            round("testpmd", Some(5.75e6), true),
            round("vecswitch", None, false),
            round("testpmd", Some(5.04e6), false),
            round("vecswitch", Some(2.2e6), false),
        ]);
        let h = headlines(&a);
        let t = &h["testpmd phy2phy_ndrpdr phy2phy-memif 64B NDR"];
        assert_eq!(
            t.figure,
            Figure {
                fps: 5.04e6,
                interval: Some((0.94e6, 5.75e6)),
                tester_limited: false,
                searches: 3,
            }
        );
        assert_eq!((t.device.as_str(), t.size.as_str()), ("testpmd", "64B"));
        assert!((t.line_fps - 14_880_952.38).abs() < 1.0, "{}", t.line_fps);
        // A round without a lower bound counts as the lowest: median 2.0 of (none, 2.0, 2.2).
        let v = &h["vecswitch phy2phy_ndrpdr phy2phy-memif 64B NDR"].figure;
        assert_eq!(
            (v.fps, v.interval, v.searches),
            (2.0e6, Some((2.0e6, 2.2e6)), 3)
        );
        // The PDR of each round (2.0 Mfps, no spread) merges too: three equal searches.
        let p = &h["testpmd phy2phy_ndrpdr phy2phy-memif 64B PDR"].figure;
        assert_eq!((p.fps, p.interval), (2.0e6, Some((2.0e6, 2.0e6))));
        // The median search's tester-limited flag is the cell's: 5.75 was, 5.04 was not.
        let b = run(vec![
            round("testpmd", Some(5.75e6), true),
            round("testpmd", Some(6.2e6), true),
            round("testpmd", Some(1.0e6), false),
        ]);
        assert!(
            headlines(&b)["testpmd phy2phy_ndrpdr phy2phy-memif 64B NDR"]
                .figure
                .tester_limited
        );
        // A cell whose median round found nothing is left out.
        let none = run(vec![round("x", None, false), round("x", None, false)]);
        assert!(!headlines(&none).contains_key("x phy2phy_ndrpdr phy2phy-memif 64B NDR"));
    }

    #[test]
    fn a_difference_inside_the_runs_own_intervals_says_why_instead_of_agreeing() {
        // A: 5.04 [0.94, 5.75]; B: 1.1 [0.9, 5.6]: 4.6× apart, but each run saw both modes.
        let a = run(vec![
            round("testpmd", Some(0.94e6), false),
            round("testpmd", Some(5.75e6), false),
            round("testpmd", Some(5.04e6), false),
        ]);
        let b = run(vec![
            round("testpmd", Some(0.9e6), false),
            round("testpmd", Some(1.1e6), false),
            round("testpmd", Some(5.6e6), false),
        ]);
        let g = agree(&a, &b, 0.10);
        let c = g
            .cells
            .iter()
            .find(|c| c.key == "testpmd phy2phy_ndrpdr phy2phy-memif 64B NDR")
            .unwrap();
        assert!(c.outside_tolerance && !c.intervals_disjoint);
        assert_eq!(c.verdict(), Verdict::WithinIntervals);
        assert!(!c.agrees());
        // NDR within intervals; PDR (2.0 in all rounds) agrees.
        assert_eq!((g.agreeing(), g.within_intervals()), (1, 1));
        assert!(!g.all_agree() && g.all_agree_or_explained());
        let text = g.render();
        assert!(
            text.contains("1 more differ by more than ±10 %, within the intervals")
                && text.contains("0 disagree beyond their intervals")
                && text.contains("(3 searches)")
                && text.contains("outside ±10 %, within the runs' intervals"),
            "{text}"
        );
        // Tight intervals that do not reach each other: disagrees.
        let b = run(vec![
            round("testpmd", Some(0.9e6), false),
            round("testpmd", Some(0.91e6), false),
            round("testpmd", Some(0.92e6), false),
        ]);
        let g = agree(&a, &b, 0.10);
        assert_eq!(g.cells[0].verdict(), Verdict::Disagrees);
        assert!(!g.all_agree_or_explained());
        // One run without an interval: its figure inside the other's interval is within it.
        assert_eq!(
            verdict(2.0, 0.1, (1.0, 3.0), (2.0, 2.0), true, false),
            Verdict::WithinIntervals
        );
        assert_eq!(
            verdict(2.0, 0.1, (1.0, 1.0), (2.0, 2.0), false, false),
            Verdict::Disagrees
        );
        assert_eq!(
            verdict(1.05, 0.1, (1.0, 1.0), (1.05, 1.05), false, false),
            Verdict::Agrees
        );
    }

    #[test]
    fn device_cost_of_rounds_merges_and_compares_at_an_equal_load() {
        // Three rounds of OVS over veth, tester-limited, cost at 100 kfps in each: A 12000 [11000,
        // 12500], B 12600 [12000, 13000] → B/A 1.05, agrees.
        let mut a = run(vec![limited("ovs", 200e3)]);
        let mut b = run(vec![limited("ovs", 150e3)]);
        let rows = |v: &[f64]| -> Vec<DeviceCostRow> {
            v.iter()
                .enumerate()
                .map(|(i, &c)| {
                    let mut r = cost_row("ovs", "phy2phy-veth", 100e3, c, 0.4);
                    r.round = Some(i as u32 + 1);
                    r
                })
                .collect()
        };
        a.device_cost = rows(&[12_000.0, 11_000.0, 12_500.0]);
        b.device_cost = rows(&[13_000.0, 12_600.0, 12_000.0]);
        let g = agree(&a, &b, 0.10);
        let k = g.cells[0].cost.as_ref().expect("compared by cost");
        assert_eq!(
            (k.a_cycles_per_packet, k.b_cycles_per_packet),
            (12_000.0, 12_600.0)
        );
        assert_eq!(
            (k.a_range, k.b_range),
            (Some((11_000.0, 12_500.0)), Some((12_000.0, 13_000.0)))
        );
        assert_eq!(k.verdict, Verdict::Agrees);
        assert!(
            g.render()
                .contains("12000 [11000, 12500] → 12600 [12000, 13000] cycles/packet"),
            "{}",
            g.render()
        );
        // B 1.5× dearer, ranges apart: disagrees; ranges that meet: within them.
        b.device_cost = rows(&[18_000.0, 19_000.0, 17_500.0]);
        assert_eq!(agree(&a, &b, 0.10).cells[0].verdict(), Verdict::Disagrees);
        b.device_cost = rows(&[12_400.0, 19_000.0, 17_500.0]);
        assert_eq!(
            agree(&a, &b, 0.10).cells[0].verdict(),
            Verdict::WithinIntervals
        );
    }
}
