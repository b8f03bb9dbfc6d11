//! Inline SVG charts for the HTML report, no scripts, no external resources:
//! [`LineChart`] (series of points, linear or log axes, optional category labels on x, dashed
//! reference series, flagged points drawn with a red ring) and [`BarChart`] (bars with min–max
//! whiskers).

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
        format!("{:.3}M", x / 1e6).replace(".000M", "M")
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
    fn human_numbers() {
        assert_eq!(human(14_880_952.0), "14.881M");
        assert_eq!(human(2_000_000.0), "2M");
        assert_eq!(human(5713.0), "5713");
        assert_eq!(human(20_000.0), "20k");
        assert_eq!(human(0.384), "0.384");
    }
}
