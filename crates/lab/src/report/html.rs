//! The HTML report: one self-contained page (inline CSS, inline SVG, no scripts, nothing fetched)
//! that opens with the headline chart (NDR/PDR per device, topology and frame size with the
//! [min, max] of searches and rounds and the generator's limit, [`IntervalChart`]) above every
//! table, then a summary table, device cost, provenance, the generator's calibrated limits, charts (throughput vs frame
//! size per device with the generator's limit and the line rate as dashed references, throughput
//! vs table size, latency percentiles, loss vs offered load, back-to-back), and every test's
//! metrics and raw trials. Tester-limited results are flagged in the tables (red rows) and charts
//! (red rings).

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::measurer::TrialResult;
use crate::procedures::throughput::{StepPurpose, Verdict};
use crate::report::svg::{
    esc, human, Bar, BarChart, IntervalChart, LineChart, Mark, Point, Series,
};
use crate::results::{Cell, Outcome, Row, RunResults, TestRecord, COLUMNS};

pub(crate) const CSS: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1200px;color:#222}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#f3f3f3}td.t,th.t{text-align:left}tr.tl td{background:#fde8e8}
.badge{background:#d00;color:#fff;border-radius:3px;padding:1px 5px;font-size:11px}
figure{margin:1em 0}details{margin:.5em 0 1.5em}h2{border-bottom:2px solid #eee;padding-bottom:.2em}
.note{color:#555;font-size:13px}";

const SUMMARY_COLUMNS: &[&str] = &[
    "id",
    "vswitch",
    "deployment",
    "packet_size",
    "procedure",
    "goal",
    "scale",
    "throughput_rx_fps",
    "throughput_rx_percent",
    "frame_loss_percent",
    "avg_latency_ns",
    "max_latency_ns",
    "b2b_frames",
    "tester_limited",
];

pub fn render(run: &RunResults) -> String {
    let mut s = String::new();
    let _ = write!(s, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>vecswitch benchmark report</title><style>{CSS}</style></head><body>");
    let _ = write!(s, "<h1>vecswitch benchmark report</h1>");
    // The figure a reader looks for first, above every table (issue 25 item 6).
    headline(&mut s, run);
    side_by_side(&mut s, run);
    s.push_str(&crate::device_cost::html(&run.device_cost));
    provenance(&mut s, run);
    summary(&mut s, run);
    charts(&mut s, run);
    details(&mut s, run);
    s.push_str("</body></html>\n");
    s
}

/// The headline chart: NDR and PDR (MLRsearch goals; plain throughput tests when the run has
/// no MLRsearch) per device, topology and frame size, the median of each cell's searches and
/// rounds with their [min, max] ([`crate::report::agree::headlines`]), and the generator's
/// calibrated limit of each topology and size as a dashed line. Nothing when the run has no
/// such figure.
fn headline(s: &mut String, run: &RunResults) {
    let Some((chart, caption)) = headline_chart(run) else {
        return;
    };
    let _ = write!(
        s,
        "<figure class=headline>{}<figcaption class=note>{}</figcaption></figure>",
        chart.render(),
        esc(&caption)
    );
}

/// The headline chart of `run` and its one-line caption ([`headline`]).
pub(crate) fn headline_chart(run: &RunResults) -> Option<(IntervalChart, String)> {
    let heads: Vec<_> = crate::report::agree::headlines(run)
        .into_values()
        .filter(|h| h.scale.is_none())
        .collect();
    let searched = heads.iter().any(|h| h.goal != "throughput");
    let heads: Vec<_> = heads
        .into_iter()
        .filter(|h| (h.goal != "throughput") == searched)
        .collect();
    if heads.is_empty() {
        return None;
    }
    let topo_of = |t: &TestRecord| t.topology.clone().unwrap_or_else(|| t.deployment.clone());
    let size_of = |t: &TestRecord| {
        t.frame_mix
            .clone()
            .unwrap_or_else(|| format!("{}B", t.frame_size))
    };
    // Categories: topologies in the run's order, each one's fixed sizes ascending, then mixes.
    let mut topos: Vec<String> = Vec::new();
    let mut devices: Vec<String> = Vec::new();
    for t in &run.tests {
        if !topos.contains(&topo_of(t)) {
            topos.push(topo_of(t));
        }
        if heads.iter().any(|h| h.device == t.vswitch) && !devices.contains(&t.vswitch) {
            devices.push(t.vswitch.clone());
        }
    }
    let mut cats: Vec<(String, String)> = Vec::new();
    for topo in &topos {
        let mut sizes: Vec<(Option<u32>, String)> = heads
            .iter()
            .filter(|h| &h.topology == topo)
            .map(|h| {
                (
                    h.size.strip_suffix('B').and_then(|b| b.parse().ok()),
                    h.size.clone(),
                )
            })
            .collect();
        sizes.sort_by(|a, b| (a.0.is_none(), a.0, &a.1).cmp(&(b.0.is_none(), b.0, &b.1)));
        sizes.dedup();
        cats.extend(sizes.into_iter().map(|(_, sz)| (topo.clone(), sz)));
    }
    // A shape per goal, named by the test id too when the run has several searching tests.
    let ids: std::collections::BTreeSet<&str> = heads.iter().map(|h| h.id.as_str()).collect();
    let shape_of = |h: &crate::report::agree::Headline| {
        let flows = h
            .group
            .split_once(" flows=")
            .map(|(_, f)| format!(" {f} flows"))
            .unwrap_or_default();
        if ids.len() > 1 {
            format!("{} {}{flows}", h.id, h.goal)
        } else {
            format!("{}{flows}", h.goal)
        }
    };
    let mut shapes: Vec<String> = Vec::new();
    for h in &heads {
        let sh = shape_of(h);
        if !shapes.contains(&sh) {
            shapes.push(sh);
        }
    }
    shapes.sort_by_key(|g| (!g.contains("NDR"), !g.contains("PDR"), g.clone()));
    let marks = heads
        .iter()
        .filter_map(|h| {
            Some(Mark {
                category: cats
                    .iter()
                    .position(|(t, sz)| *t == h.topology && *sz == h.size)?,
                series: devices.iter().position(|d| *d == h.device)?,
                shape: shapes.iter().position(|g| *g == shape_of(h))?,
                value: h.figure.fps,
                range: h.figure.interval,
                flag: h.figure.tester_limited,
            })
        })
        .collect();
    let limits = cats
        .iter()
        .enumerate()
        .filter_map(|(c, (topo, sz))| {
            run.tests
                .iter()
                .filter(|t| &topo_of(t) == topo && &size_of(t) == sz)
                .find_map(|t| {
                    t.generator_limit_fps
                        .or_else(|| run.generator.as_ref().and_then(|g| g.limit_for_test(t)))
                })
                .map(|l| (c, l))
        })
        .collect();
    let gen = run
        .generator
        .as_ref()
        .map_or_else(|| "generator".to_string(), |g| g.name.clone());
    let label = |sz: &str| match sz.strip_suffix('B') {
        Some(b) if b.parse::<u32>().is_ok() => format!("{b} B"),
        _ => sz.to_string(),
    };
    let what = if searched {
        shapes.join(", ")
    } else {
        "Throughput".to_string()
    };
    let chart = IntervalChart {
        title: format!("{what} per device, topology and frame size"),
        y_label: "frames/s received (log)".into(),
        categories: cats
            .iter()
            .map(|(t, sz)| format!("{}\n{t}", label(sz)))
            .collect(),
        series: devices,
        shapes,
        marks,
        limits,
        limit_label: format!("{gen} calibrated limit"),
        log_y: true,
    };
    let mut caption = format!(
        "{what} in frames/s (log scale): each marker is the median of a cell's searches and rounds, its whisker their [min, max]; the dashed red line is {gen}'s calibrated limit on that topology and size (no device in the loop) — a figure at or near it measures the tester, not the device (red ring: tester-limited)."
    );
    if run.stopped.is_some() || !run.failures.is_empty() {
        caption.push_str(" Not every cell was measured: see the notes below.");
    }
    Some((chart, caption))
}

fn provenance(s: &mut String, run: &RunResults) {
    let p = &run.provenance;
    let _ = write!(s, "<h2>Provenance</h2><table>");
    let mut kv = |k: &str, v: String| {
        let _ = write!(
            s,
            "<tr><th class=t>{}</th><td class=t>{}</td></tr>",
            esc(k),
            esc(&v)
        );
    };
    kv("schema", run.schema.clone());
    kv("date", p.date.clone());
    let dirty = if p.git_dirty == Some(true) {
        " (uncommitted changes)"
    } else {
        ""
    };
    kv(
        "git revision",
        format!("{}{dirty}", p.git_revision.as_deref().unwrap_or("unknown")),
    );
    kv("command", p.command.join(" "));
    kv("host", p.hostname.clone().unwrap_or_default());
    kv("kernel", p.kernel.clone().unwrap_or_default());
    kv(
        "CPU",
        format!(
            "{} × {}",
            p.cores.unwrap_or(0),
            p.cpu_model.as_deref().unwrap_or("unknown")
        ),
    );
    kv("tool version", p.tool_version.clone());
    s.push_str("</table>");
    if let Some(c) = &p.config {
        let pretty = serde_json::to_string_pretty(c).unwrap_or_else(|_| c.to_string());
        let _ = write!(
            s,
            "<details><summary>suite / config as run</summary><pre>{}</pre></details>",
            esc(&pretty)
        );
    }
    if let Some(g) = &run.generator {
        let _ = write!(s, "<h3>Traffic generator: {}</h3><p class=note>Calibrated limits: the generator looped to itself with no device in the path, per topology and frame size. Results at or near these rates measure the tester, not the device.</p><table><tr><th class=t>topology</th><th class=t>frame size</th><th>calibrated max (frames/s)</th><th>latency floor p50 / p99 (µs)</th><th class=t>how</th></tr>", esc(&g.name));
        for c in &g.calibrated_limits {
            let floor = c.latency_floor.as_ref().map_or(String::new(), |f| {
                format!(
                    "<span title=\"{}\">{:.1} / {:.1}</span>",
                    esc(&f.to_string()),
                    f.p50_ns / 1e3,
                    f.p99_ns / 1e3
                )
            });
            let _ = write!(
                s,
                "<tr><td class=t>{}</td><td class=t>{}</td><td>{:.0}</td><td>{}</td><td class=t>{}</td></tr>",
                esc(c.topology.as_deref().unwrap_or("any")),
                esc(&c.size_label()),
                c.max_fps,
                floor,
                esc(c.method.as_deref().unwrap_or(""))
            );
        }
        s.push_str("</table><p class=note>Latency floor: the generator's own latency through the loop at a low rate, with no device. It is part of every latency below (not subtracted).</p>");
    }
}

/// The side-by-side table (device × frame size) of [`crate::report::summary`].
fn side_by_side(s: &mut String, run: &RunResults) {
    if let Some(why) = &run.stopped {
        let _ = write!(s, "<p><span class=badge>stopped early</span> {}. The results below are those measured before the stop.</p>", esc(why));
    }
    for f in &run.failures {
        let _ = write!(s, "<p><span class=badge>not measured</span> {}</p>", esc(f));
    }
    let sum = crate::report::summary::summary(run);
    if sum.rows.is_empty() {
        return;
    }
    s.push_str("<h2>Summary</h2><p class=note>Throughput: highest load forwarded without loss (beyond the test's loss tolerance), received frames/s in millions and as % of the theoretical 10GE line rate for the frame size (a mix: its mean size). One column per throughput test; latency at the throughput found. Each result shows the generator's calibrated limit for its topology and size: a result at that limit is the tester's, not the device's.</p><div class=scroll><table><tr>");
    for h in &sum.header {
        let _ = write!(s, "<th class=t>{}</th>", esc(h));
    }
    s.push_str("</tr>");
    for r in &sum.rows {
        let limited = r
            .iter()
            .any(|c| c.ends_with(crate::report::summary::TESTER_MARK));
        let _ = write!(s, "<tr{}>", if limited { " class=tl" } else { "" });
        for (i, c) in r.iter().enumerate() {
            let _ = write!(
                s,
                "<td{}>{}</td>",
                if i < 3 { " class=t" } else { "" },
                esc(c)
            );
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
    if sum.tester_limited {
        let _ = write!(
            s,
            "<p class=note>{}</p>",
            esc(crate::report::summary::TESTER_NOTE)
        );
    }
    let how = crate::report::summary::settings(run);
    if !how.is_empty() {
        s.push_str("<p class=note>How the figures were measured:</p><ul class=note>");
        for h in how {
            let _ = write!(s, "<li>{}</li>", esc(&h));
        }
        s.push_str("</ul>");
    }
}

fn is_tl(r: &Row) -> bool {
    r.get("tester_limited") == Some(&Cell::Flag(true))
}

fn row_table(s: &mut String, cols: &[&str], rows: &[Row]) {
    let cols: Vec<&str> = cols
        .iter()
        .copied()
        .filter(|c| rows.iter().any(|r| r.contains_key(c)))
        .collect();
    s.push_str("<div class=scroll><table><tr>");
    for c in &cols {
        let _ = write!(s, "<th>{}</th>", esc(c));
    }
    s.push_str("</tr>");
    for r in rows {
        let _ = write!(s, "<tr{}>", if is_tl(r) { " class=tl" } else { "" });
        for c in &cols {
            match r.get(c) {
                Some(Cell::Flag(true)) => {
                    s.push_str("<td><span class=badge>tester-limited</span></td>")
                }
                Some(Cell::Text(t)) => {
                    let _ = write!(s, "<td class=t>{}</td>", esc(t));
                }
                Some(v) => {
                    let _ = write!(s, "<td>{}</td>", esc(&v.to_string()));
                }
                None => s.push_str("<td></td>"),
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></div>");
}

fn summary(s: &mut String, run: &RunResults) {
    let rows: Vec<Row> = run
        .tests
        .iter()
        .flat_map(|t| {
            let mut rows = t.rows();
            // The summary keeps one line per sweep: its last (highest-load) step.
            if matches!(t.outcome, Outcome::LinearSweep(_)) && rows.len() > 1 {
                rows.drain(..rows.len() - 1);
            }
            rows
        })
        .collect();
    let _ = write!(s, "<h2>All results</h2>");
    if rows.iter().any(is_tl) {
        s.push_str("<p class=note><span class=badge>tester-limited</span> rows: the generator could not offer the intended load; the figure is the tester's ceiling, never DUT loss.</p>");
    }
    row_table(s, SUMMARY_COLUMNS, &rows);
}

fn series_name(t: &TestRecord, extra: &str) -> String {
    let mut n = format!(
        "{} {}",
        t.vswitch,
        t.topology.as_deref().unwrap_or(&t.deployment)
    );
    if !extra.is_empty() {
        n.push(' ');
        n.push_str(extra);
    }
    n
}

fn charts(s: &mut String, run: &RunResults) {
    s.push_str("<h2>Charts</h2>");
    // Throughput vs frame size: one chart per topology (line rate and generator limit differ),
    // one series per device and throughput test (scale points and frame-size mixes left out: a
    // mix is not a point on a frame-size axis; the tables show it).
    let mut scale_series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
    let topo_of = |t: &TestRecord| t.topology.clone().unwrap_or_else(|| t.deployment.clone());
    let mut topos: Vec<String> = Vec::new();
    for t in &run.tests {
        if !topos.contains(&topo_of(t)) {
            topos.push(topo_of(t));
        }
    }
    for topo in &topos {
        let mut by_series: BTreeMap<String, Vec<Point>> = BTreeMap::new();
        let mut line_rate: BTreeMap<u32, f64> = BTreeMap::new();
        let mut sizes_seen = std::collections::BTreeSet::new();
        for t in run.tests.iter().filter(|t| &topo_of(t) == topo) {
            for r in t.rows() {
                let Some(fps) = r.get("throughput_rx_fps").and_then(Cell::num) else {
                    continue;
                };
                let goal = match (&t.outcome, r.get("goal")) {
                    (Outcome::Throughput(_), _) => t.id.clone(),
                    (Outcome::Mlrsearch(_), Some(Cell::Text(g))) => g.clone(),
                    _ => continue,
                };
                let p = Point {
                    x: f64::from(t.frame_size),
                    y: fps,
                    flag: is_tl(&r),
                };
                match t.scale {
                    Some(sc) => scale_series
                        .entry(series_name(t, &format!("{} {goal}", t.size_label())))
                        .or_default()
                        .push(Point { x: sc as f64, ..p }),
                    None if t.frame_mix.is_none() => {
                        sizes_seen.insert(t.frame_size);
                        by_series
                            .entry(format!("{} {goal}", t.vswitch))
                            .or_default()
                            .push(p);
                        line_rate.insert(t.frame_size, t.line.max_fps());
                    }
                    None => {}
                }
            }
        }
        // A test run at one size only (BestN/WorstN at 64 B) is in the tables, not a curve.
        by_series.retain(|_, pts| pts.len() > 1);
        if by_series.is_empty() {
            continue;
        }
        let mut series: Vec<Series> = by_series
            .into_iter()
            .map(|(name, points)| Series {
                name,
                points,
                reference: false,
            })
            .collect();
        series.push(Series {
            name: "line rate".into(),
            points: line_rate
                .iter()
                .map(|(&f, &m)| Point {
                    x: f64::from(f),
                    y: m,
                    flag: false,
                })
                .collect(),
            reference: true,
        });
        if let Some(g) = &run.generator {
            let limits: Vec<Point> = g
                .calibrated_limits
                .iter()
                .filter(|c| c.mix.is_none() && c.topology.as_ref().is_none_or(|x| x == topo))
                .map(|c| Point {
                    x: f64::from(c.frame_size),
                    y: c.max_fps,
                    flag: false,
                })
                .collect();
            sizes_seen.extend(limits.iter().map(|p| p.x as u32));
            series.push(Series {
                name: format!("{} limit", g.name),
                points: limits,
                reference: true,
            });
        }
        // Frame sizes as evenly spaced categories (64 … 1518 crowd each other on any numeric axis).
        let index: Vec<u32> = sizes_seen.iter().copied().collect();
        let pos = |x: f64| {
            index
                .iter()
                .position(|&f| f64::from(f) == x)
                .map_or(f64::NAN, |i| i as f64)
        };
        for se in &mut series {
            for p in &mut se.points {
                p.x = pos(p.x);
            }
            se.points.retain(|p| p.x.is_finite());
        }
        let sizes: Vec<(f64, String)> = index
            .iter()
            .enumerate()
            .map(|(i, f)| (i as f64, f.to_string()))
            .collect();
        figure(s, LineChart {
            title: format!("Throughput vs frame size — {topo}"),
            x_label: "frame size (bytes, FCS included)".into(),
            y_label: "frames/s received".into(),
            series,
            log_x: false,
            log_y: true,
            x_categories: Some(sizes),
        }.render(), "Dashed: theoretical 10GE line rate and the generator's calibrated limit on this topology. Red rings: tester-limited results.");
    }
    if !scale_series.is_empty() {
        let series = scale_series
            .into_iter()
            .map(|(name, points)| Series {
                name,
                points,
                reference: false,
            })
            .collect();
        figure(
            s,
            LineChart {
                title: "Throughput vs table size".into(),
                x_label: "table entries / flows".into(),
                y_label: "frames/s".into(),
                series,
                log_x: true,
                log_y: false,
                x_categories: None,
            }
            .render(),
            "",
        );
    }
    // Latency percentiles.
    let cats = ["min", "p50", "p90", "p99", "p99.9", "p99.99", "max"];
    let mut lat_series = Vec::new();
    for t in &run.tests {
        if let Outcome::Latency(points) = &t.outcome {
            for p in points {
                if let Some(l) = &p.stats {
                    let ys = [
                        l.min_ns,
                        l.p50_ns,
                        l.p90_ns,
                        l.p99_ns,
                        l.p99_9_ns,
                        l.p99_99_ns,
                        l.max_ns,
                    ];
                    lat_series.push(Series {
                        name: series_name(
                            t,
                            &format!("{} {:.0}%", t.size_label(), p.fraction * 100.0),
                        ),
                        points: ys
                            .iter()
                            .enumerate()
                            .map(|(i, &y)| Point {
                                x: i as f64,
                                y: y / 1e3,
                                flag: p.tester_limited_trials > 0,
                            })
                            .collect(),
                        reference: false,
                    });
                }
            }
        }
    }
    if !lat_series.is_empty() {
        if lat_series.len() > 8 {
            lat_series.retain(|s| s.name.ends_with("100%"));
        }
        figure(
            s,
            LineChart {
                title: "Latency percentiles".into(),
                x_label: "percentile".into(),
                y_label: "latency (µs)".into(),
                series: lat_series,
                log_x: false,
                log_y: true,
                x_categories: Some(
                    cats.iter()
                        .enumerate()
                        .map(|(i, c)| (i as f64, c.to_string()))
                        .collect(),
                ),
            }
            .render(),
            "Percent = load as a share of the measured throughput (RFC 2544 §26.2).",
        );
    }
    // Loss vs offered load.
    let mut loss_series = Vec::new();
    for t in &run.tests {
        if let Outcome::LinearSweep(points) = &t.outcome {
            loss_series.push(Series {
                name: series_name(t, &t.size_label()),
                points: points
                    .iter()
                    .map(|p| Point {
                        x: p.percent,
                        y: p.loss_ratio * 100.0,
                        flag: p.tester_limited,
                    })
                    .collect(),
                reference: false,
            });
        }
    }
    if !loss_series.is_empty() {
        figure(
            s,
            LineChart {
                title: "Frame loss vs offered load".into(),
                x_label: "offered load (% of line rate)".into(),
                y_label: "frame loss (%)".into(),
                series: loss_series,
                ..Default::default()
            }
            .render(),
            "RFC 2544 §26.3 frame loss rate per step.",
        );
    }
    // Back-to-back.
    let bars: Vec<Bar> = run
        .tests
        .iter()
        .filter_map(|t| match &t.outcome {
            Outcome::BackToBack(b) if b.applicable => Some(Bar {
                label: format!("{} {}", t.vswitch, t.size_label()),
                value: b.average_frames,
                range: Some((b.min_frames as f64, b.max_frames as f64)),
                flag: b.tester_limited,
            }),
            _ => None,
        })
        .collect();
    if !bars.is_empty() {
        figure(
            s,
            BarChart {
                title: "Back-to-back frames (RFC 9004)".into(),
                y_label: "longest lossless burst (frames)".into(),
                bars,
            }
            .render(),
            "Bar: average over repetitions; whisker: min–max.",
        );
    }
}

fn figure(s: &mut String, svg: String, caption: &str) {
    let _ = write!(
        s,
        "<figure>{svg}<figcaption class=note>{}</figcaption></figure>",
        esc(caption)
    );
}

fn details(s: &mut String, run: &RunResults) {
    s.push_str("<h2>Tests</h2>");
    for t in &run.tests {
        let rows = t.rows();
        let tl = rows.iter().any(is_tl);
        let _ = write!(
            s,
            "<h3>{} — {} {} ({}){}</h3><p class=note>{} · deployment {} · traffic {} · {} × {:.0} Mb/s{}{}</p>",
            esc(&t.id),
            esc(&t.vswitch),
            esc(&t.size_label()),
            t.outcome.name(),
            if tl { " <span class=badge>tester-limited</span>" } else { "" },
            esc(&t.description),
            esc(&t.deployment),
            esc(&t.traffic_type),
            t.line.ports,
            t.line.bits_per_second / 1e6,
            if t.bidirectional { " · bidirectional" } else { "" },
            t.scale.map(|x| format!(" · scale {x}")).unwrap_or_default(),
        );
        if let Some(setup) = &t.setup {
            let shared: Vec<String> = setup
                .pointer("/placement/shared_cpus")
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            for note in &shared {
                let _ = write!(
                    s,
                    "<p class=note><span class=badge>shared CPU</span> {}</p>",
                    esc(note)
                );
            }
            let _ = write!(
                s,
                "<details><summary>setup</summary><pre>{}</pre></details>",
                esc(&serde_json::to_string_pretty(setup).unwrap_or_default())
            );
        }
        let cols: Vec<&str> = COLUMNS
            .iter()
            .copied()
            .filter(|c| {
                ![
                    "id",
                    "vswitch",
                    "deployment",
                    "traffic_type",
                    "packet_size",
                    "procedure",
                ]
                .contains(c)
            })
            .collect();
        row_table(s, &cols, &rows);
        let trials = trials_of(t);
        if !trials.is_empty() {
            let _ = write!(s, "<details><summary>{} trials</summary><table><tr><th>#</th><th class=t>step</th><th>intended fps</th><th>duration s</th><th>offered</th><th>received</th><th>loss %</th><th>not sent</th><th>refused at device ingress</th><th>lost in device</th><th>dropped at tester rx</th><th>unexplained</th><th class=t>limit</th><th>tester</th></tr>", trials.len());
            for (i, (tr, step)) in trials.iter().enumerate() {
                // Where the frames went (blank when the measurer did not account, e.g. simulated);
                // "?" for a device counter the lab could not read.
                let split = match &tr.accounting {
                    Some(a) => {
                        let opt = |v: Option<u64>| v.map_or("?".to_string(), |n| n.to_string());
                        format!(
                            "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                            a.not_sent,
                            a.refused_by_device,
                            opt(a.lost_in_device),
                            opt(a.dropped_at_tester_rx),
                            a.unexplained
                        )
                    }
                    None => "<td></td>".repeat(5),
                };
                let limit = if tr.limit == crate::TrialLimit::None {
                    String::new()
                } else {
                    format!(
                        "<span title=\"{}\">{}</span>",
                        esc(&tr.limit.to_string()),
                        esc(tr.limit.label())
                    )
                };
                let _ = write!(
                    s,
                    "<tr{}><td>{}</td><td class=t>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.6}</td>{}<td class=t>{}</td><td>{}</td></tr>",
                    if tr.tester_limited { " class=tl" } else { "" },
                    i + 1,
                    esc(step),
                    human(tr.intended_load.fps),
                    tr.intended_duration.as_secs_f64(),
                    tr.offered_frames,
                    tr.received_frames,
                    tr.loss_percent(),
                    split,
                    limit,
                    if tr.tester_limited { "<span class=badge>limited</span>" } else { "" }
                );
            }
            s.push_str("</table></details>");
        }
    }
}

/// Every trial of a test with what it was for (search step purpose and verdict, load fraction…).
fn trials_of(t: &TestRecord) -> Vec<(&TrialResult, String)> {
    match &t.outcome {
        Outcome::Throughput(r) => {
            let mut v: Vec<(&TrialResult, String)> =
                r.trials.iter().map(|tr| (tr, String::new())).collect();
            for st in &r.steps {
                let verdict = match st.verdict {
                    Verdict::Pass => "pass",
                    Verdict::Fail => "fail",
                    Verdict::TesterLimited { .. } => "tester-limited",
                };
                let purpose = match st.purpose {
                    StepPurpose::Learning => "learning",
                    StepPurpose::Search => "search",
                    StepPurpose::Verification => "verification",
                };
                for entry in v.iter_mut().skip(st.first_trial).take(st.trial_count) {
                    entry.1 = format!("{purpose}: {verdict}");
                }
            }
            v
        }
        Outcome::Mlrsearch(r) => r
            .trials
            .iter()
            .map(|tr| {
                (
                    tr,
                    format!("{:.0} s trial", tr.intended_duration.as_secs_f64()),
                )
            })
            .collect(),
        Outcome::Latency(p) => p
            .iter()
            .flat_map(|p| {
                p.trials
                    .iter()
                    .map(move |tr| (tr, format!("{:.0}% of throughput", p.fraction * 100.0)))
            })
            .collect(),
        Outcome::LinearSweep(p) => p
            .iter()
            .map(|p| (&p.trial, format!("{}% of line rate", p.percent)))
            .collect(),
        Outcome::Soak(r) => r
            .intervals
            .iter()
            .enumerate()
            .map(|(i, tr)| (tr, format!("interval {}", i + 1)))
            .collect(),
        Outcome::Failover(f) => f
            .learning
            .iter()
            .map(|tr| (tr, "learning".to_string()))
            .chain(std::iter::once((
                &f.trial,
                format!("member {} down at {:.1} s", f.member, f.down_at_s),
            )))
            .collect(),
        Outcome::BackToBack(_) | Outcome::AddressCaching(_) | Outcome::AddressLearning(_) => {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample_run;

    #[test]
    fn setup_and_shared_cpus_are_shown() {
        let mut run = sample_run();
        run.tests[0].setup = Some(serde_json::json!({
            "dut": "testpmd <io>",
            "placement": { "processes": [], "shared_cpus": ["cpu 1 shared by dut (vecswitch) and vnf (dpdk-testpmd)"] }
        }));
        let html = render(&run);
        assert!(html
            .contains("shared CPU</span> cpu 1 shared by dut (vecswitch) and vnf (dpdk-testpmd)"));
        assert!(html.contains("testpmd &lt;io&gt;"));
    }

    #[test]
    fn summary_first_and_a_stop_is_said() {
        let mut run = sample_run();
        run.stopped = Some("stopped by a signal during ovs on phy2phy-veth at 512 B".into());
        run.failures
            .push("ovs on phy2phy-veth at 64 B: starting ovs: no ovs-vswitchd".into());
        let html = render(&run);
        let summary = html.find("<h2>Summary</h2>").unwrap();
        assert!(summary < html.find("<h2>Provenance</h2>").unwrap());
        let stop = html
            .find("stopped early</span> stopped by a signal during ovs on phy2phy-veth at 512 B")
            .unwrap();
        assert!(stop < summary);
        assert!(html.contains("not measured</span> ovs on phy2phy-veth at 64 B"));
    }

    #[test]
    fn the_headline_chart_comes_first_above_every_table() {
        let run = sample_run();
        let html = render(&run);
        let h1 = html.find("</h1>").unwrap();
        let svg = html.find("<svg").expect("a chart");
        let table = html.find("<table").expect("a table");
        assert!(
            svg < table,
            "the headline chart's <svg> precedes the first <table>"
        );
        // Nothing but the chart between the title and it.
        assert_eq!(&html[h1..svg], "</h1><figure class=headline>");
        let (chart, caption) = headline_chart(&run).unwrap();
        assert!(!chart.marks.is_empty() && !chart.limits.is_empty());
        assert!(caption.contains("[min, max]") && caption.contains("calibrated limit"));
        assert!(html[svg..table].contains(&esc(&caption)));
        // A run with no throughput figure has no headline chart.
        let mut empty = run.clone();
        empty.tests.clear();
        assert!(headline_chart(&empty).is_none());
    }

    #[test]
    fn self_contained_with_all_charts_and_flags() {
        let run = sample_run();
        let html = render(&run);
        assert!(html.starts_with("<!DOCTYPE html>"));
        // Nothing external: no scripts, no links, no remote URLs except the SVG namespace.
        assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("src="));
        assert_eq!(
            html.matches("http").count(),
            html.matches("http://www.w3.org/2000/svg").count()
        );
        for title in [
            "Throughput vs frame size",
            "Latency percentiles",
            "Frame loss vs offered load",
            "Back-to-back frames",
            "Throughput vs table size",
        ] {
            assert!(html.contains(title), "missing chart {title}");
        }
        assert!(html.contains("calibrated max"));
        assert!(html.contains("verification: pass") && html.contains("search: fail"));
        assert!(html.contains("class=tl"));
        assert!(html.contains(run.provenance.date.as_str()));
        assert!(!html.contains("NaN") && !html.contains(">inf"));
    }
}
