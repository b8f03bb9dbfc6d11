//! Cross-check of our MLRsearch against FD.io's reference library (PyPI `MLRsearch` 1.2.1): both
//! search the same seeded simulated device, each with its own copy of it, and for every goal both
//! must bracket the known answer, meet the goal width, and agree with each other to within one
//! goal width on the lower bound, the upper bound and the conditional throughput. Their cost
//! (trial-seconds) is printed side by side and bounded: ours at most the reference's on the
//! deterministic devices and, on the noisy and sporadic ones, in median and total over the seeds
//! (docs/METHODOLOGY.md, "Cross-check", has the table).
//!
//! The devices: a linear-loss knee and a fixed capacity (deterministic), a noisy capacity (drawn
//! per trial) and a fixed capacity with sporadic small losses at any load (the OVS-DPDK behaviour
//! of seed 000) — the last two are what the exceed ratio is for.
//!
//! The Python side (`mlrsearch_pypi.py`) asks for trials over its stdout; this test answers each
//! with `SimDut::trial` on its stdin, so no extra binary is involved. It runs the interpreter of
//! the venv `make setup` creates (`.venv/` at the repository root, Debian's python3 with the
//! pinned package): without it, or with another version of the package, the test fails and says
//! to run `make setup`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use vecswitch_lab::procedures::mlrsearch::{mlrsearch, MlrConfig, MlrResult, SearchGoal};
use vecswitch_lab::sim::{SimDut, SimModel};
use vecswitch_lab::{Load, Measurer};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mlrsearch_pypi.py");
/// The interpreter `scripts/setup.sh` installs the reference into.
const PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python3");
/// The version `scripts/setup.sh` pins.
const PINNED: &str = "1.2.1";

/// Fails (never skips) unless the pinned reference library is installed where setup puts it.
fn require_reference() {
    let install =
        format!("install python3 and MLRsearch=={PINNED}: make setup (it creates {PYTHON})");
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('MLRsearch'))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{install}; running it failed: {e}"));
    assert!(
        out.status.success(),
        "{install}; it cannot find the package: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(version, PINNED, "{install}; found MLRsearch {version}");
}

/// Kills the Python process if the test fails half-way.
struct Child(std::process::Child);
impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs the reference library against `dut`; returns its RESULT document.
fn run_reference(dut: &mut SimDut, min: f64, max: f64, goals: &[SearchGoal]) -> Value {
    let cfg = json!({
        "min_load": min,
        "max_load": max,
        "goals": goals.iter().map(|g| json!({
            "loss_ratio": g.loss_ratio,
            "exceed_ratio": g.exceed_ratio,
            "relative_width": g.relative_width,
            "initial_trial_duration": g.initial_trial_duration.as_secs_f64(),
            "final_trial_duration": g.final_trial_duration.as_secs_f64(),
            "duration_sum": g.duration_sum.as_secs_f64(),
        })).collect::<Vec<_>>(),
    });
    let mut child = Child(
        Command::new(PYTHON)
            .arg(SCRIPT)
            .arg(cfg.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {PYTHON}: {e}")),
    );
    let mut to_py = child.0.stdin.take().unwrap();
    let from_py = BufReader::new(child.0.stdout.take().unwrap());
    for line in from_py.lines() {
        let line = line.expect("read from python");
        if let Some(result) = line.strip_prefix("RESULT ") {
            return serde_json::from_str(result).expect("RESULT json");
        }
        let req: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad request {line:?}: {e}"));
        let d = Duration::from_secs_f64(req["duration"].as_f64().unwrap());
        let t = dut
            .trial(Load::fps(req["load"].as_f64().unwrap()), d)
            .unwrap();
        writeln!(
            to_py,
            "{}",
            json!({ "offered": t.offered_frames, "received": t.received_frames })
        )
        .unwrap();
        to_py.flush().unwrap();
    }
    let status = child.0.wait().unwrap();
    panic!("python exited ({status}) without a RESULT line");
}

/// One goal's answer from either implementation.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    lower: f64,
    upper: f64,
    conditional_throughput: f64,
}

fn ours_bounds(r: &MlrResult, i: usize) -> Bounds {
    let g = &r.goals[i];
    Bounds {
        lower: g.relevant_lower_bound_fps.expect("our lower bound"),
        upper: g.relevant_upper_bound_fps.expect("our upper bound"),
        conditional_throughput: g.conditional_throughput_fps.expect("our cond. throughput"),
    }
}

fn theirs_bounds(r: &Value, i: usize) -> Bounds {
    let g = &r["goals"][i];
    let get = |k: &str| {
        g[k].as_f64()
            .unwrap_or_else(|| panic!("reference {k} missing: {g}"))
    };
    Bounds {
        lower: get("lower"),
        upper: get("upper"),
        conditional_throughput: get("conditional_throughput"),
    }
}

/// What a device's answer is for one goal: `known` is the load at which the exceed-ratio share of
/// trials turns bad; loads outside `known × (1 ± noise)` classify the same in every trial.
struct Known {
    known: f64,
    noise: f64,
}

/// Searches `model` with both implementations, checks their answers; returns the trial-seconds,
/// ours then the reference's.
fn compare_on(name: &str, model: SimModel, seed: u64, known: &[Known]) -> (f64, f64) {
    let (min, max) = (1e4, 1.488e7);
    let goals = vec![SearchGoal::ndr(), SearchGoal::pdr()];
    let ours = mlrsearch(
        &mut SimDut::new(model, seed),
        &MlrConfig {
            min_fps: min,
            max_fps: max,
            goals: goals.clone(),
            max_trials: 5000,
        },
    )
    .unwrap();
    let theirs = run_reference(&mut SimDut::new(model, seed), min, max, &goals);
    let reference_cost = theirs["trial_seconds"].as_f64().unwrap();
    eprintln!(
        "{name} (seed {seed}): trial-seconds ours {:.0}, reference {reference_cost:.0}",
        ours.trial_seconds
    );
    for (i, (g, k)) in goals.iter().zip(known).enumerate() {
        let (o, t) = (ours_bounds(&ours, i), theirs_bounds(&theirs, i));
        eprintln!(
            "  {}: ours [{:.0}, {:.0}] ct {:.0}; reference [{:.0}, {:.0}] ct {:.0}; known {:.0} ± {:.1} %",
            g.name,
            o.lower,
            o.upper,
            o.conditional_throughput,
            t.lower,
            t.upper,
            t.conditional_throughput,
            k.known,
            k.noise * 100.0
        );
        let w = g.relative_width;
        for (who, b) in [("ours", o), ("reference", t)] {
            // The goal width is met, and the bracket holds the known answer (up to the band of
            // loads whose classification depends on the draw of the noise).
            assert!(
                (b.upper - b.lower) / b.upper <= w * (1.0 + 1e-9),
                "{name} {}: {who} bracket [{}, {}] wider than {w}",
                g.name,
                b.lower,
                b.upper
            );
            assert!(
                b.lower <= k.known * (1.0 + k.noise) * (1.0 + 1e-9)
                    && b.upper >= k.known * (1.0 - k.noise),
                "{name} {}: {who} bracket [{}, {}] misses {}",
                g.name,
                b.lower,
                b.upper,
                k.known
            );
            // Conditional throughput (draft Appendix A.2) is the forwarding rate of a trial at
            // the lower bound that met the goal loss ratio.
            assert!(
                b.conditional_throughput <= b.lower * (1.0 + 1e-9)
                    && b.conditional_throughput >= b.lower * (1.0 - g.loss_ratio) * (1.0 - 1e-9),
                "{name} {}: {who} conditional throughput {} vs lower bound {}",
                g.name,
                b.conditional_throughput,
                b.lower
            );
        }
        // The two implementations agree to within one goal width.
        for (what, a, b) in [
            ("lower bound", o.lower, t.lower),
            ("upper bound", o.upper, t.upper),
            (
                "conditional throughput",
                o.conditional_throughput,
                t.conditional_throughput,
            ),
        ] {
            assert!(
                (a - b).abs() <= w * k.known,
                "{name} {}: {what} ours {a} vs reference {b}, more than {w} of {} apart",
                g.name,
                k.known
            );
        }
    }
    (ours.trial_seconds, reference_cost)
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    (v[(n - 1) / 2] + v[n / 2]) / 2.0
}

/// Bounds the cost over the seeds: the median of ours at most `median_ratio` × the reference's
/// median, the total at most `total_ratio` × theirs, and no seed above `worst_ratio` × the
/// reference's cost on that seed.
fn assert_costs(
    name: &str,
    costs: &[(f64, f64)],
    median_ratio: f64,
    total_ratio: f64,
    worst_ratio: f64,
) {
    let ours: Vec<f64> = costs.iter().map(|c| c.0).collect();
    let theirs: Vec<f64> = costs.iter().map(|c| c.1).collect();
    let worst = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let (mo, mt) = (median(&ours), median(&theirs));
    let (to, tt) = (ours.iter().sum::<f64>(), theirs.iter().sum::<f64>());
    let worst_seed = costs.iter().map(|(o, t)| o / t).fold(0.0, f64::max);
    eprintln!(
        "{name}, {} seeds: trial-seconds ours median {mo} worst {}, reference median {mt} worst \
         {}; median {:.3}x, total {to} vs {tt} ({:.3}x), worst seed {worst_seed:.2}x",
        costs.len(),
        worst(&ours),
        worst(&theirs),
        mo / mt,
        to / tt
    );
    assert!(
        mo <= median_ratio * mt,
        "{name}: median trial-seconds ours {mo} vs reference {mt}"
    );
    assert!(
        to <= total_ratio * tt,
        "{name}: total trial-seconds ours {to} vs reference {tt}"
    );
    assert!(
        worst_seed <= worst_ratio,
        "{name}: one seed costs {worst_seed:.2}x the reference's trial-seconds"
    );
}

/// NDR and PDR (0.5 %) of a device with capacity `c`: loss ratio 1 − c/load above it, so PDR at
/// c / (1 − 0.005).
fn capacity_answers(c: f64, noise: f64) -> [Known; 2] {
    [
        Known { known: c, noise },
        Known {
            known: c / 0.995,
            noise,
        },
    ]
}

#[test]
fn agrees_with_the_reference_library_on_linear_loss() {
    require_reference();
    // No loss up to 1 Mfps, then loss ratio (load − knee)/knee: NDR 1 Mfps, PDR (0.5 %) 1.005 Mfps.
    let cost = compare_on(
        "linear loss",
        SimModel::LinearLoss {
            knee_fps: 1e6,
            slope: 1.0,
        },
        7,
        &[
            Known {
                known: 1e6,
                noise: 0.0,
            },
            Known {
                known: 1.005e6,
                noise: 0.0,
            },
        ],
    );
    assert_costs("linear loss", &[cost], 1.0, 1.0, 1.0);
}

#[test]
fn agrees_with_the_reference_library_on_fixed_capacity() {
    require_reference();
    let c = 2.5e6;
    let cost = compare_on(
        "fixed capacity",
        SimModel::Fixed { capacity_fps: c },
        7,
        &capacity_answers(c, 0.0),
    );
    assert_costs("fixed capacity", &[cost], 1.0, 1.0, 1.0);
}

#[test]
fn agrees_with_the_reference_library_on_sporadic_loss() {
    require_reference();
    // One trial in five loses 1..10 frames at any load: with exceed ratio 0.5 both goals still
    // sit at the capacity (10 frames of ~1.5 M are far below PDR's 0.5 %).
    let c = 1.5e6;
    let costs: Vec<(f64, f64)> = SEEDS
        .map(|seed| {
            compare_on(
                "sporadic loss",
                SimModel::Sporadic {
                    capacity_fps: c,
                    probability: 0.2,
                    max_lost: 10,
                },
                seed,
                &capacity_answers(c, 0.0),
            )
        })
        .collect();
    // Over these 20 seeds: median 37.5 vs 37.5 trial-seconds, total 817 vs 838, worst seed 1.22×
    // (seed 13, where sporadic losses below the capacity walk both searches down).
    assert_costs("sporadic loss", &costs, 1.0, 1.0, 1.3);
}

#[test]
fn agrees_with_the_reference_library_on_noisy_capacity() {
    require_reference();
    // Capacity drawn per trial uniformly in c × (1 ± NOISE): half the trials at load c are bad,
    // so with exceed ratio 0.5 the answer is the median capacity c (PDR: c / 0.995).
    let c = 2e6;
    let costs: Vec<(f64, f64)> = SEEDS
        .map(|seed| {
            compare_on(
                "noisy capacity",
                SimModel::Noisy {
                    capacity_fps: c,
                    spread: NOISE,
                },
                seed,
                &capacity_answers(c, NOISE),
            )
        })
        .collect();
    // Over these 20 seeds: median 35 vs 36 trial-seconds, no seed above the reference's cost.
    assert_costs("noisy capacity", &costs, 1.0, 1.0, 1.05);
}

/// Every seed must pass: agreement to one goal width is not a lucky draw.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;
/// Noisy device: capacity within ± half a goal width (0.25 %) of its median.
const NOISE: f64 = 0.0025;
