//! `vecswitch soak` end to end, short (5 × 1 s; `make soak` runs 60 s with `--strict`): it starts
//! its own switch (a learning, aging bridge of two memif ports), searches the NDR with the lab's
//! RFC 2544 search, soaks at 90 % of it through `GenMeasurer`, and records loss per interval,
//! buffers in use and RSS over time. The test checks the record's mechanism — every interval
//! there at the asked load, samples of buffers and RSS over the run, buffers back to their
//! baseline — not a loss figure (this host is shared while it runs).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn a_5s_soak_reports_every_interval_with_buffers_and_rss() {
    let out = TempFile(std::env::temp_dir().join(format!("vsw-soak-{}.json", std::process::id())));
    let run = Command::new(BIN)
        .args([
            "soak",
            "--duration",
            "5s",
            "--interval",
            "1s",
            "--search-trial",
            "200ms",
            "--max-fps",
            "200000",
            "-o",
        ])
        .arg(&out.0)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "soak failed: {}{stdout}",
        String::from_utf8_lossy(&run.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out.0).unwrap()).unwrap();
    let ndr = v["ndr_fps"].as_f64().unwrap();
    let load = v["load_fps"].as_f64().unwrap();
    assert!(ndr >= 1000.0, "{v}");
    assert!(
        (load - 0.9 * ndr).abs() < 1e-6 * ndr,
        "90 % of the NDR: {load} vs {ndr}"
    );
    assert_eq!(v["ndr_searched"], true);
    let intervals = v["soak"]["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 5, "{v}");
    for t in intervals {
        assert_eq!(t["intended_load"]["fps"].as_f64().unwrap(), load, "{t}");
        assert!(t["offered_frames"].as_u64().unwrap() > 0, "{t}");
    }
    // One line per interval on stdout, then the summary.
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .count(),
        5,
        "{stdout}"
    );
    assert!(stdout.contains("RSS"), "{stdout}");
    let samples = v["samples"].as_array().unwrap();
    assert!(
        samples.len() >= 5,
        "a baseline and one per interval: {samples:?}"
    );
    let mut last_t = -1.0;
    for s in samples {
        assert!(s["rss_kib"].as_u64().unwrap() > 1000, "{s}");
        assert!(s["buffers_in_use"].as_u64().is_some(), "{s}");
        let t = s["t_s"].as_f64().unwrap();
        assert!(t > last_t, "samples in time order: {samples:?}");
        last_t = t;
    }
    assert_eq!(
        v["buffers_after"], v["buffers_before"],
        "buffers back to baseline"
    );
}

#[test]
fn bad_arguments_name_the_flag_and_what_is_accepted() {
    for (args, expect) in [
        (&["--interval", "0s"][..], "--interval"),
        (&["--duration", "ten"][..], "--duration"),
        (&["--percent", "150"][..], "--percent"),
    ] {
        let run = Command::new(BIN).arg("soak").args(args).output().unwrap();
        assert!(!run.status.success());
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(
            err.contains(expect) && err.contains("accepted"),
            "{args:?}: {err}"
        );
    }
}
