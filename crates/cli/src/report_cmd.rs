//! `vecswitch report`: render a results document or compare two.
//!
//! ```text
//! vecswitch report html|md|csv RESULTS.json [-o FILE]
//! vecswitch report compare A.json B.json [--threshold PCT]
//! vecswitch report agree A.json B.json [--tolerance PCT]
//! ```
//!
//! Rendering writes to stdout unless `-o` names a file. `compare` prints what regressed from A to
//! B beyond the threshold (default 5 %) and exits non-zero when anything did, so CI can gate on it.
//! `agree` asks whether two runs of the same suite (two `make demo` runs) give the same headline
//! figures: per cell (MLRsearch NDR/PDR lower bound, throughput) the ratio B/A, flagged outside
//! ±tolerance (default 10 %) or when the repeated searches' intervals do not overlap, plus the
//! rankings that flipped; it exits non-zero when any cell disagrees (`vecswitch_lab::report::agree`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use vecswitch_lab::report;
use vecswitch_lab::results::RunResults;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// Self-contained HTML report with charts.
    Html(RenderArgs),
    /// VSPERF-style Markdown.
    Md(RenderArgs),
    /// CSV with VSPERF column names.
    Csv(RenderArgs),
    /// List what regressed from A to B.
    Compare(CompareArgs),
    /// Do two runs of the same suite agree on every headline figure?
    Agree(AgreeArgs),
}

#[derive(Debug, clap::Args)]
struct AgreeArgs {
    /// First run's results.
    a: PathBuf,
    /// Second run's results.
    b: PathBuf,
    /// Percent by which two figures may differ and still agree.
    #[arg(long, default_value_t = 10.0)]
    tolerance: f64,
    /// Fail also when cells differ only within the runs' own intervals (by default those are
    /// explained: issue 7's "agree within 10 %, or the intervals say why not").
    #[arg(long)]
    strict: bool,
}

#[derive(Debug, clap::Args)]
struct RenderArgs {
    /// Results document (schema vecswitch.results/1, or an L7 suite's vecswitch.l7-results/1).
    results: PathBuf,
    /// Write here instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CompareArgs {
    /// Baseline results.
    a: PathBuf,
    /// New results.
    b: PathBuf,
    /// Percent change beyond which a metric counts as regressed.
    #[arg(long, default_value_t = 5.0)]
    threshold: f64,
}

pub fn main(args: Args) -> anyhow::Result<()> {
    match args.cmd {
        Cmd::Html(a) => render(&a, report::html::render, Some(report::l7::html)),
        Cmd::Md(a) => render(&a, report::markdown::render, Some(report::l7::markdown)),
        Cmd::Csv(a) => render(&a, report::csv::render, None),
        Cmd::Compare(a) => compare(&a),
        Cmd::Agree(a) => agree(&a),
    }
}

fn agree(a: &AgreeArgs) -> anyhow::Result<()> {
    if !(a.tolerance.is_finite() && a.tolerance >= 0.0) {
        bail!(
            "invalid --tolerance {}: expected a percentage >= 0",
            a.tolerance
        );
    }
    let (ra, rb) = (load(&a.a)?, load(&a.b)?);
    let g = report::agree(&ra, &rb, a.tolerance / 100.0);
    out!("{}", g.render());
    if g.cells.is_empty() {
        bail!(
            "no headline cell in both {} and {} (not runs of the same suite?)",
            a.a.display(),
            a.b.display()
        );
    }
    // Exit status: 0 when every cell agrees or differs only within the runs' own intervals and
    // no ranking flipped; `--strict` also fails on the cells within the intervals.
    let ok = if a.strict {
        g.all_agree()
    } else {
        g.all_agree_or_explained()
    };
    if !ok {
        let bad = if a.strict {
            g.cells.len() - g.agreeing()
        } else {
            g.cells.len() - g.agreeing() - g.within_intervals() - g.host_moved()
        };
        bail!(
            "{} of {} headline cells disagree beyond ±{}%{}; {} ranking(s) flipped",
            bad,
            g.cells.len(),
            a.tolerance,
            if a.strict {
                " (--strict: differences within the runs' intervals count)"
            } else {
                " and beyond the runs' own intervals"
            },
            g.flips.len()
        );
    }
    Ok(())
}

fn load(path: &Path) -> anyhow::Result<RunResults> {
    RunResults::load(path).with_context(|| format!("reading results {}", path.display()))
}

/// The seed-004 table of an L7 results document (`vecswitch bench` on a suite with `[l7]`,
/// schema `vecswitch.l7-results/1`), or None for any other document.
fn load_l7(path: &Path) -> anyhow::Result<Option<report::l7::L7Table>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading results {}", path.display()))?;
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    if v["results"]["schema"] != "vecswitch.l7-results/1" {
        return Ok(None);
    }
    let table = serde_json::from_value(v["table"].clone()).with_context(|| {
        format!(
            "{}: an L7 results document without a readable `table` (written by an older vecswitch? run the suite again)",
            path.display()
        )
    })?;
    Ok(Some(table))
}

fn render(
    a: &RenderArgs,
    f: fn(&RunResults) -> String,
    l7: Option<fn(&report::l7::L7Table) -> String>,
) -> anyhow::Result<()> {
    let text = match load_l7(&a.results)? {
        Some(t) => match l7 {
            Some(l7) => l7(&t),
            None => bail!(
                "{} is an L7 results document: render it with `report md` or `report html`",
                a.results.display()
            ),
        },
        None => f(&load(&a.results)?),
    };
    match &a.output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => out!("{text}"),
    }
    Ok(())
}

fn compare(a: &CompareArgs) -> anyhow::Result<()> {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        bail!(
            "invalid --threshold {}: expected a percentage >= 0",
            a.threshold
        );
    }
    let (ra, rb) = (load(&a.a)?, load(&a.b)?);
    let c = report::compare(&ra, &rb, a.threshold);
    out!("{}", c.render());
    if c.has_regressions() {
        bail!(
            "{} metric(s) regressed by more than {}%",
            c.regressions.len(),
            a.threshold
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        args: Args,
    }

    fn run(argv: &[&str]) -> anyhow::Result<()> {
        let t = T::try_parse_from(std::iter::once("report").chain(argv.iter().copied()))?;
        main(t.args)
    }

    /// A scratch directory removed on drop, also when the test fails.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let p = std::env::temp_dir()
                .join(format!("vecswitch-report-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&p).unwrap();
            Scratch(p)
        }
        fn path(&self, f: &str) -> String {
            self.0.join(f).to_string_lossy().into_owned()
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn renders_every_format_and_compares() {
        let dir = Scratch::new("formats");
        let a = vecswitch_lab::demo::simulated_run(1, vec!["test".into()]).unwrap();
        a.save(Path::new(&dir.path("a.json"))).unwrap();
        for (fmt, needle) in [
            ("html", "<!DOCTYPE html>"),
            ("md", "| Metric | Result |"),
            ("csv", "throughput_rx_fps"),
        ] {
            let out = dir.path(&format!("out.{fmt}"));
            run(&[fmt, &dir.path("a.json"), "-o", &out]).unwrap();
            assert!(
                std::fs::read_to_string(&out).unwrap().contains(needle),
                "{fmt}"
            );
        }
        // Identical runs: no regression, exit OK.
        run(&["compare", &dir.path("a.json"), &dir.path("a.json")]).unwrap();
        // A different seed changes sporadic-loss figures beyond 0.1 %: non-zero exit.
        let b = vecswitch_lab::demo::simulated_run(2, vec!["test".into()]).unwrap();
        b.save(Path::new(&dir.path("b.json"))).unwrap();
        let e = run(&[
            "compare",
            &dir.path("a.json"),
            &dir.path("b.json"),
            "--threshold",
            "0.1",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("regressed by more than 0.1%"), "{e}");
    }

    #[test]
    fn agree_on_two_result_files() {
        let dir = Scratch::new("agree");
        let a = vecswitch_lab::demo::simulated_run(1, vec!["test".into()]).unwrap();
        a.save(Path::new(&dir.path("a.json"))).unwrap();
        // A run agrees with itself.
        run(&["agree", &dir.path("a.json"), &dir.path("a.json")]).unwrap();
        // Every headline figure of B 20 % lower: all disagree at ±10 %, none at ±25 %.
        let mut b = a.clone();
        for t in b.tests.iter_mut() {
            if let vecswitch_lab::results::Outcome::Mlrsearch(r) = &mut t.outcome {
                for g in r.goals.iter_mut() {
                    g.relevant_lower_bound_fps = g.relevant_lower_bound_fps.map(|x| x * 0.8);
                }
                r.repeated = None;
            }
        }
        b.save(Path::new(&dir.path("b.json"))).unwrap();
        let e = run(&["agree", &dir.path("a.json"), &dir.path("b.json")]).unwrap_err();
        assert!(e.to_string().contains("disagree beyond ±10%"), "{e}");
        // The same 20 % with repeated searches whose intervals overlap ([0.5, 1.5] × A's figure,
        // [0.4, 1.5] × it in B): explained by the intervals, so not a failure — except --strict.
        let spread = |r: &mut vecswitch_lab::results::RunResults, scale: f64| {
            for t in r.tests.iter_mut() {
                if let vecswitch_lab::results::Outcome::Mlrsearch(m) = &mut t.outcome {
                    let goals = m
                        .goals
                        .iter()
                        .filter_map(|g| {
                            let x = g.relevant_lower_bound_fps? / scale;
                            let lbs = vec![Some(x * 0.5 * scale), Some(x * scale), Some(x * 1.5)];
                            Some(vecswitch_lab::procedures::mlrsearch::GoalSpread {
                                name: g.goal.name.clone(),
                                lower_bounds_fps: lbs.clone(),
                                conditional_throughputs_fps: lbs,
                                median_fps: Some(x * scale),
                                min_fps: Some(x * 0.5 * scale),
                                max_fps: Some(x * 1.5),
                            })
                        })
                        .collect();
                    m.repeated =
                        Some(vecswitch_lab::procedures::mlrsearch::Repeated { searches: 3, goals });
                }
            }
        };
        let (mut a2, mut b2) = (a.clone(), b.clone());
        spread(&mut a2, 1.0);
        spread(&mut b2, 0.8);
        a2.save(Path::new(&dir.path("a2.json"))).unwrap();
        b2.save(Path::new(&dir.path("b2.json"))).unwrap();
        run(&["agree", &dir.path("a2.json"), &dir.path("b2.json")]).unwrap();
        let e = run(&[
            "agree",
            &dir.path("a2.json"),
            &dir.path("b2.json"),
            "--strict",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("--strict"), "{e}");
        run(&[
            "agree",
            &dir.path("a.json"),
            &dir.path("b.json"),
            "--tolerance",
            "25",
        ])
        .unwrap();
    }

    #[test]
    fn errors_name_the_file_and_the_value() {
        let dir = Scratch::new("errors");
        let e = run(&["md", &dir.path("missing.json")]).unwrap_err();
        assert!(format!("{e:#}").contains("missing.json"), "{e:#}");
        std::fs::write(dir.path("bad.json"), r#"{"schema":"vsperf/2"}"#).unwrap();
        let e = run(&["csv", &dir.path("bad.json")]).unwrap_err();
        assert!(format!("{e:#}").contains("vsperf/2"), "{e:#}");
        let e = run(&[
            "compare",
            &dir.path("bad.json"),
            &dir.path("bad.json"),
            "--threshold=-3",
        ])
        .unwrap_err();
        assert!(e.to_string().contains("--threshold -3"), "{e}");
    }
}
