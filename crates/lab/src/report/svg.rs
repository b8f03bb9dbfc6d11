//! Inline SVG charts for the HTML report, no scripts, no external resources:
//! [`LineChart`] (series of points, linear or log axes, optional category labels on x, dashed
//! reference series, flagged points drawn with a red ring), [`BarChart`] (bars with min–max
//! whiskers) and [`IntervalChart`] (markers with [min, max] whiskers per category and a dashed
//! reference level per category: the report's headline chart).

use std::fmt::Write;

const W: f64 = 860.0;
const H: f64 = 380.0;
const ML: f64 = 80.0;
const MR: f64 = 270.0;
const MT: f64 = 36.0;
const MB: f64 = 56.0;
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One point; `flag` marks it (tester-limited) with a red ring and a note in its tooltip.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub flag: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<Point>,
    /// Drawn dashed and grey-ish: a reference line (e.g. the generator's calibrated limit).
    pub reference: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub log_x: bool,
    pub log_y: bool,
    /// Replace numeric x ticks by labels at given x positions.
    pub x_categories: Option<Vec<(f64, String)>>,
}

/// Escapes text for SVG/HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A number in a compact human form: 14.9M, 812k, 0.38, 5713.
pub fn human(x: f64) -> String {
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.3}G", x / 1e9)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else if a >= 1e6 {
        let m = format!("{:.3}", x / 1e6);
        format!("{}M", m.trim_end_matches('0').trim_end_matches('.'))
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3).replace(".0k", "k")
    } else if a >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Axis mapping and tick positions.
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64>, log: bool, zero_based: bool) -> Axis {
        let vals: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut lo, mut hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if vals.is_empty() {
            (lo, hi) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            if zero_based && lo > 0.0 {
                lo = 0.0;
            }
            if hi <= lo {
                hi = lo + if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
            }
            let step = nice_step((hi - lo) / 5.0);
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        Axis { lo, hi, log }
    }

    /// Position in [0, 1].
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut t = Vec::new();
            let mut v = self.lo;
            while v <= self.hi * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let n = ((self.hi - self.lo) / step).round() as usize;
            (0..=n).map(|i| self.lo + i as f64 * step).collect()
        }
    }
}

/// 1, 2 or 5 × 10^k at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw > 0.0 && raw.is_finite()) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let n = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

fn frame(s: &mut String, title: &str, x_label: &str, y_label: &str) {
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" font-family="sans-serif" font-size="12" role="img"><title>{t}</title><rect width="{W}" height="{H}" fill="#fff"/><text x="{tx}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{t}</text><text x="{xl}" y="{xly}" text-anchor="middle">{x}</text><text transform="translate(16,{yly}) rotate(-90)" text-anchor="middle">{y}</text>"##,
        t = esc(title),
        tx = (ML + W - MR) / 2.0,
        xl = (ML + W - MR) / 2.0,
        xly = H - 12.0,
        yly = (MT + H - MB) / 2.0,
        x = esc(x_label),
        y = esc(y_label),
    );
}

impl LineChart {
    pub fn render(&self) -> String {
        let mut s = String::new();
        frame(&mut s, &self.title, &self.x_label, &self.y_label);
        let all = || self.series.iter().flat_map(|se| se.points.iter());
        let xa = Axis::new(all().map(|p| p.x), self.log_x, false);
        let ya = Axis::new(all().map(|p| p.y), self.log_y, true);
        let pw = W - ML - MR;
        let ph = H - MT - MB;
        let px = |x: f64| ML + xa.frac(x) * pw;
        let py = |y: f64| MT + ph - ya.frac(y) * ph;
        // Grid and ticks.
        for t in ya.ticks() {
            let y = py(t);
            let _ = write!(
                s,
                r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                W - MR,
                ML - 6.0,
                y + 4.0,
                human(t)
            );
        }
        let xticks: Vec<(f64, String)> = match &self.x_categories {
            Some(c) => c.clone(),
            None => xa.ticks().into_iter().map(|t| (t, human(t))).collect(),
        };
        for (t, label) in xticks {
            let x = px(t);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{MT}" y2="{}" stroke="#eee"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                H - MB,
                H - MB + 16.0,
                esc(&label)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        // Series.
        let mut color_i = 0;
        let mut ref_i = 0;
        for (i, se) in self.series.iter().enumerate() {
            let color = if se.reference {
                ref_i += 1;
                ["#666", "#c0392b", "#8e44ad"][(ref_i - 1) % 3]
            } else {
                color_i += 1;
                PALETTE[(color_i - 1) % PALETTE.len()]
            };
            let mut pts: Vec<&Point> = se
                .points
                .iter()
                .filter(|p| p.x.is_finite() && p.y.is_finite())
                .collect();
            pts.sort_by(|a, b| a.x.total_cmp(&b.x));
            let path: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", px(p.x), py(p.y)))
                .collect();
            let dash = if se.reference {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            };
            if path.len() > 1 {
                let _ = write!(
                    s,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
                    path.join(" ")
                );
            }
            if !se.reference {
                for p in &pts {
                    let note = if p.flag { " (tester-limited)" } else { "" };
                    let _ = write!(
                        s,
                        r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{color}"><title>{}: {} → {}{note}</title></circle>"#,
                        px(p.x),
                        py(p.y),
                        esc(&se.name),
                        human(p.x),
                        human(p.y)
                    );
                    if p.flag {
                        let _ = write!(
                            s,
                            r##"<circle cx="{:.1}" cy="{:.1}" r="7" fill="none" stroke="#d00" stroke-width="2"/>"##,
                            px(p.x),
                            py(p.y)
                        );
                    }
                }
            }
            // Legend.
            let ly = MT + 10.0 + i as f64 * 18.0;
            let lx = W - MR + 12.0;
            let _ = write!(
                s,
                r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/><text x="{}" y="{}">{}</text>"#,
                lx + 22.0,
                lx + 28.0,
                ly + 4.0,
                esc(&truncate(&se.name, 36))
            );
        }
        if self
            .series
            .iter()
            .any(|se| se.points.iter().any(|p| p.flag))
        {
            let ly = MT + 10.0 + self.series.len() as f64 * 18.0;
            let lx = W - MR + 12.0;
            let _ = write!(
                s,
                r##"<circle cx="{}" cy="{ly}" r="6" fill="none" stroke="#d00" stroke-width="2"/><text x="{}" y="{}">tester-limited</text>"##,
                lx + 11.0,
                lx + 28.0,
                ly + 4.0
            );
        }
        if self.series.iter().all(|se| se.points.is_empty()) {
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#888">no data</text>"##,
                ML + pw / 2.0,
                MT + ph / 2.0
            );
        }
        s.push_str("</svg>");
        s
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// One bar with an optional min–max whisker.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    pub range: Option<(f64, f64)>,
    pub flag: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub bars: Vec<Bar>,
}

impl BarChart {
    pub fn render(&self) -> String {
        let mut s = String::new();
        frame(&mut s, &self.title, "", &self.y_label);
        let ya = Axis::new(
            self.bars
                .iter()
                .flat_map(|b| [Some(b.value), b.range.map(|r| r.1)])
                .flatten(),
            false,
            true,
        );
        let pw = W - ML - MR;
        let ph = H - MT - MB;
        let py = |y: f64| MT + ph - ya.frac(y) * ph;
        for t in ya.ticks() {
            let y = py(t);
            let _ = write!(
                s,
                r##"<line x1="{ML}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                W - MR,
                ML - 6.0,
                y + 4.0,
                human(t)
            );
        }
        let n = self.bars.len().max(1) as f64;
        let slot = pw / n;
        for (i, b) in self.bars.iter().enumerate() {
            let x = ML + i as f64 * slot + slot * 0.2;
            let bw = slot * 0.6;
            let color = PALETTE[i % PALETTE.len()];
            let y = py(b.value);
            let stroke = if b.flag {
                r##" stroke="#d00" stroke-width="3""##
            } else {
                ""
            };
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{color}"{stroke}><title>{}: {}{}</title></rect>"#,
                (MT + ph - y).max(0.0),
                esc(&b.label),
                human(b.value),
                if b.flag { " (tester-limited)" } else { "" }
            );
            if let Some((lo, hi)) = b.range {
                let cx = x + bw / 2.0;
                let _ = write!(
                    s,
                    r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#000"/>"##,
                    py(lo),
                    py(hi),
                    cx - 6.0,
                    cx + 6.0,
                    py(lo),
                    py(lo),
                    cx - 6.0,
                    cx + 6.0,
                    py(hi),
                    py(hi)
                );
            }
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
                x + bw / 2.0,
                H - MB + 16.0,
                esc(&truncate(&b.label, (slot / 6.5) as usize + 2))
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{ML}" y="{MT}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        s.push_str("</svg>");
        s
    }
}

/// One figure of an [`IntervalChart`]: a marker at `value` with an optional [min, max] whisker.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Index into [`IntervalChart::categories`] (the x position).
    pub category: usize,
    /// Index into [`IntervalChart::series`] (the colour: a device).
    pub series: usize,
    /// Index into [`IntervalChart::shapes`] (the marker: a goal, NDR or PDR).
    pub shape: usize,
    pub value: f64,
    pub range: Option<(f64, f64)>,
    /// Tester-limited: a red ring.
    pub flag: bool,
}

/// Markers with whiskers per category (dot-and-interval plot), a dashed reference level per
/// category (the generator's calibrated limit of that topology and size, its value under the
/// category's label), log or linear y: the
/// report's headline chart. Within a category each (series, shape) gets its own slot, so that
/// intervals never hide each other.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IntervalChart {
    pub title: String,
    pub y_label: String,
    /// Category labels; a `\n` splits one over two lines (`64 B` / `phy2phy-memif`).
    pub categories: Vec<String>,
    pub series: Vec<String>,
    pub shapes: Vec<String>,
    pub marks: Vec<Mark>,
    /// (category, level): a dashed line across the category.
    pub limits: Vec<(usize, f64)>,
    /// Legend entry of the limit lines.
    pub limit_label: String,
    pub log_y: bool,
}

/// The headline chart's size (wider than the others: it leads the page).
const IW: f64 = 1100.0;
const IH: f64 = 420.0;
const IMR: f64 = 250.0;
const IMB: f64 = 72.0;

/// A marker of `shape` (circle, square, triangle, diamond, then again) centred at (x, y).
fn marker(shape: usize, x: f64, y: f64, color: &str, tip: &str) -> String {
    let r = 5.0;
    let body = match shape % 4 {
        0 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}""#),
        1 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{color}""#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            r#"<polygon points="{x:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{color}""#,
            y - r - 1.0,
            x - r - 1.0,
            y + r,
            x + r + 1.0,
            y + r
        ),
        _ => format!(
            r#"<polygon points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{color}""#,
            y - r - 1.0,
            x + r + 1.0,
            y + r + 1.0,
            x - r - 1.0
        ),
    };
    if tip.is_empty() {
        format!("{body}/>")
    } else {
        let end = match shape % 4 {
            0 => "circle",
            1 => "rect",
            _ => "polygon",
        };
        format!("{body}><title>{}</title></{end}>", esc(tip))
    }
}

impl IntervalChart {
    pub fn render(&self) -> String {
        let (ml, mt) = (ML, MT);
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {IW} {IH}" width="{IW}" height="{IH}" style="max-width:100%;height:auto" font-family="sans-serif" font-size="12" role="img"><title>{t}</title><rect width="{IW}" height="{IH}" fill="#fff"/><text x="{tx}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{t}</text><text transform="translate(16,{yly}) rotate(-90)" text-anchor="middle">{y}</text>"##,
            t = esc(&self.title),
            tx = (ml + IW - IMR) / 2.0,
            yly = (mt + IH - IMB) / 2.0,
            y = esc(&self.y_label),
        );
        let values = self
            .marks
            .iter()
            .flat_map(|m| {
                let (lo, hi) = m.range.unwrap_or((m.value, m.value));
                [m.value, lo, hi]
            })
            .chain(self.limits.iter().map(|l| l.1));
        let ya = Axis::new(values, self.log_y, true);
        let pw = IW - ml - IMR;
        let ph = IH - mt - IMB;
        let py = |y: f64| mt + ph - ya.frac(y) * ph;
        // Grid: every tick, and 2× and 5× of a log axis's decades when there are few.
        let mut ticks: Vec<(f64, bool)> = ya.ticks().into_iter().map(|t| (t, true)).collect();
        if self.log_y && ticks.len() <= 5 {
            let minor: Vec<(f64, bool)> = ticks
                .iter()
                .flat_map(|(t, _)| [(t * 2.0, false), (t * 5.0, false)])
                .filter(|(t, _)| *t < ya.hi)
                .collect();
            ticks.extend(minor);
        }
        for (t, major) in ticks {
            let y = py(t);
            let _ = write!(
                s,
                r##"<line x1="{ml}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="{}"/><text x="{}" y="{:.1}" text-anchor="end"{}>{}</text>"##,
                IW - IMR,
                if major { "#ccc" } else { "#eee" },
                ml - 6.0,
                y + 4.0,
                if major {
                    ""
                } else {
                    r##" fill="#777" font-size="10""##
                },
                human(t)
            );
        }
        let n = self.categories.len().max(1) as f64;
        let cw = pw / n;
        for (c, label) in self.categories.iter().enumerate() {
            let cx = ml + (c as f64 + 0.5) * cw;
            if c > 0 {
                let x = ml + c as f64 * cw;
                let _ = write!(
                    s,
                    r##"<line x1="{x:.1}" x2="{x:.1}" y1="{mt}" y2="{}" stroke="#bbb"/>"##,
                    IH - IMB
                );
            }
            for (k, line) in label.split('\n').enumerate() {
                let _ = write!(
                    s,
                    r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle"{}>{}</text>"#,
                    IH - IMB + 18.0 + k as f64 * 15.0,
                    if k == 0 { r#" font-weight="bold""# } else { "" },
                    esc(&truncate(line, (cw / 6.5) as usize + 2))
                );
            }
            // The category's reference level.
            for (_, v) in self.limits.iter().filter(|l| l.0 == c) {
                let y = py(*v);
                let _ = write!(
                    s,
                    r##"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#c0392b" stroke-width="2" stroke-dasharray="6 4"><title>{}: {}</title></line><text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="11" fill="#c0392b">limit {}</text>"##,
                    cx - cw * 0.46,
                    cx + cw * 0.46,
                    esc(&self.limit_label),
                    human(*v),
                    IH - IMB + 18.0 + label.split('\n').count() as f64 * 15.0,
                    human(*v)
                );
            }
            // Slots: one per (series, shape) present in the category.
            let mut slots: Vec<(usize, usize)> = self
                .marks
                .iter()
                .filter(|m| m.category == c)
                .map(|m| (m.series, m.shape))
                .collect();
            slots.sort_unstable();
            slots.dedup();
            let sw = cw * 0.8 / slots.len().max(1) as f64;
            for m in self.marks.iter().filter(|m| m.category == c) {
                let Some(i) = slots.iter().position(|k| *k == (m.series, m.shape)) else {
                    continue;
                };
                let x = cx - cw * 0.4 + (i as f64 + 0.5) * sw;
                let color = PALETTE[m.series % PALETTE.len()];
                let tip = format!(
                    "{} {} {}: {}{}{}",
                    self.series.get(m.series).map_or("", String::as_str),
                    self.shapes.get(m.shape).map_or("", String::as_str),
                    label.replace('\n', " "),
                    human(m.value),
                    m.range
                        .map(|(lo, hi)| format!(" [{}, {}]", human(lo), human(hi)))
                        .unwrap_or_default(),
                    if m.flag { " (tester-limited)" } else { "" }
                );
                s.push_str(&marker(m.shape, x, py(m.value), color, &tip));
                // Drawn over the marker, caps wider than it: a narrow interval stays visible.
                if let Some((lo, hi)) = m.range {
                    let (ylo, yhi) = (py(lo), py(hi));
                    let _ = write!(
                        s,
                        r#"<line x1="{x:.1}" x2="{x:.1}" y1="{ylo:.1}" y2="{yhi:.1}" stroke="{color}" stroke-width="2"/><line x1="{:.1}" x2="{:.1}" y1="{ylo:.1}" y2="{ylo:.1}" stroke="{color}" stroke-width="2"/><line x1="{:.1}" x2="{:.1}" y1="{yhi:.1}" y2="{yhi:.1}" stroke="{color}" stroke-width="2"/>"#,
                        x - 8.0,
                        x + 8.0,
                        x - 8.0,
                        x + 8.0
                    );
                }
                if m.flag {
                    let _ = write!(
                        s,
                        r##"<circle cx="{x:.1}" cy="{:.1}" r="9" fill="none" stroke="#d00" stroke-width="2"/>"##,
                        py(m.value)
                    );
                }
            }
        }
        let _ = write!(
            s,
            r##"<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        // Legend: devices (colours), goals (shapes), then the conventions.
        let lx = IW - IMR + 14.0;
        let mut ly = mt + 8.0;
        for (i, name) in self.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let _ = write!(
                s,
                r#"<rect x="{lx}" y="{:.1}" width="14" height="10" fill="{color}"/><text x="{}" y="{:.1}">{}</text>"#,
                ly - 5.0,
                lx + 22.0,
                ly + 4.0,
                esc(&truncate(name, 32))
            );
            ly += 18.0;
        }
        ly += 6.0;
        for (i, name) in self.shapes.iter().enumerate() {
            s.push_str(&marker(i, lx + 7.0, ly, "#555", ""));
            let _ = write!(
                s,
                r#"<text x="{}" y="{:.1}">{}</text>"#,
                lx + 22.0,
                ly + 4.0,
                esc(&truncate(name, 32))
            );
            ly += 18.0;
        }
        ly += 6.0;
        if self.marks.iter().any(|m| m.range.is_some()) {
            let _ = write!(
                s,
                r##"<line x1="{x}" x2="{x}" y1="{:.1}" y2="{:.1}" stroke="#555" stroke-width="2"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#555" stroke-width="2"/><line x1="{:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#555" stroke-width="2"/><text x="{}" y="{:.1}">[min, max] of searches</text>"##,
                ly - 7.0,
                ly + 7.0,
                lx + 2.0,
                lx + 12.0,
                ly - 7.0,
                ly - 7.0,
                lx + 2.0,
                lx + 12.0,
                ly + 7.0,
                ly + 7.0,
                lx + 22.0,
                ly + 4.0,
                x = lx + 7.0,
            );
            ly += 20.0;
        }
        if !self.limits.is_empty() {
            let _ = write!(
                s,
                r##"<line x1="{lx}" x2="{}" y1="{ly:.1}" y2="{ly:.1}" stroke="#c0392b" stroke-width="2" stroke-dasharray="6 4"/><text x="{}" y="{:.1}">{}</text>"##,
                lx + 16.0,
                lx + 22.0,
                ly + 4.0,
                esc(&truncate(&self.limit_label, 32))
            );
            ly += 18.0;
        }
        if self.marks.iter().any(|m| m.flag) {
            let _ = write!(
                s,
                r##"<circle cx="{}" cy="{ly:.1}" r="7" fill="none" stroke="#d00" stroke-width="2"/><text x="{}" y="{:.1}">tester-limited</text>"##,
                lx + 7.0,
                lx + 22.0,
                ly + 4.0
            );
        }
        if self.marks.is_empty() {
            let _ = write!(
                s,
                r##"<text x="{}" y="{}" text-anchor="middle" fill="#888">no data</text>"##,
                ml + pw / 2.0,
                mt + ph / 2.0
            );
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1.3), 2.0);
        assert_eq!(nice_step(3.0), 5.0);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(2400.0), 5000.0);
    }

    #[test]
    fn line_chart_has_one_polyline_per_series_and_escapes_names() {
        let c = LineChart {
            title: "a<b".into(),
            series: vec![
                Series {
                    name: "x&y".into(),
                    points: vec![
                        Point {
                            x: 1.0,
                            y: 2.0,
                            flag: false,
                        },
                        Point {
                            x: 2.0,
                            y: 3.0,
                            flag: true,
                        },
                    ],
                    reference: false,
                },
                Series {
                    name: "limit".into(),
                    points: vec![
                        Point {
                            x: 1.0,
                            y: 5.0,
                            flag: false,
                        },
                        Point {
                            x: 2.0,
                            y: 5.0,
                            flag: false,
                        },
                    ],
                    reference: true,
                },
            ],
            ..Default::default()
        };
        let svg = c.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a&lt;b") && svg.contains("x&amp;y"));
        assert!(svg.contains("stroke-dasharray"));
        assert!(svg.contains("tester-limited"));
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn log_axis_ticks_are_powers_of_ten() {
        let a = Axis::new([3.0, 4000.0].into_iter(), true, false);
        assert_eq!(a.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
        assert_eq!(a.frac(1.0), 0.0);
        assert_eq!(a.frac(10000.0), 1.0);
    }

    #[test]
    fn empty_and_degenerate_charts_render() {
        let svg = LineChart::default().render();
        assert!(svg.contains("no data") && !svg.contains("NaN"));
        let b = BarChart {
            bars: vec![Bar {
                label: "z".into(),
                value: 0.0,
                range: None,
                flag: false,
            }],
            ..Default::default()
        };
        assert!(!b.render().contains("NaN"));
    }

    #[test]
    fn interval_chart_has_a_marker_whisker_and_limit_per_cell() {
        let c = IntervalChart {
            title: "NDR & PDR".into(),
            y_label: "frames/s".into(),
            categories: vec!["64 B\nphy2phy-memif".into(), "1518 B\nphy2phy-memif".into()],
            series: vec!["vecswitch".into(), "testpmd".into()],
            shapes: vec!["NDR".into(), "PDR".into()],
            marks: vec![
                Mark {
                    category: 0,
                    series: 0,
                    shape: 0,
                    value: 1e6,
                    range: Some((0.9e6, 1.2e6)),
                    flag: false,
                },
                Mark {
                    category: 0,
                    series: 1,
                    shape: 1,
                    value: 5e6,
                    range: None,
                    flag: true,
                },
            ],
            limits: vec![(0, 7.3e6), (1, 0.8e6)],
            limit_label: "generator limit".into(),
            log_y: true,
        };
        let svg = c.render();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("NDR &amp; PDR") && svg.contains("phy2phy-memif"));
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            3,
            "two limits and the legend"
        );
        assert!(
            svg.contains("vecswitch NDR 64 B phy2phy-memif: 1M [900k, 1.2M]"),
            "{svg}"
        );
        assert!(svg.contains("(tester-limited)") && svg.contains("[min, max]"));
        assert!(!svg.contains("NaN"));
        assert!(IntervalChart::default().render().contains("no data"));
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human(14_880_952.0), "14.881M");
        assert_eq!(human(2_000_000.0), "2M");
        assert_eq!(human(1_200_000.0), "1.2M");
        assert_eq!(human(5713.0), "5713");
        assert_eq!(human(20_000.0), "20k");
        assert_eq!(human(0.384), "0.384");
    }
}
