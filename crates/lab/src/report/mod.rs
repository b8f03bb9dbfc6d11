//! Renderers for a [`RunResults`](crate::results::RunResults) document:
//!
//! - [`markdown`]: VSPERF-style result pages (`Metric | Result` per test, as `result_*.md`);
//! - [`csv`]: one row per result line, VSPERF column names ([`crate::results::COLUMNS`]);
//! - [`html`]: one self-contained page (no external JS/CSS) with inline SVG charts drawn by
//!   [`svg`]: first the headline chart (NDR/PDR per device, topology and frame size with their
//!   intervals and the generator's limit), then throughput vs frame size per device (with the
//!   generator's calibrated limit),
//!   latency percentiles, loss vs offered load, back-to-back;
//! - [`summary`]: the side-by-side table (device × frame size, throughput per search policy,
//!   latency, the generator's limit) that Markdown and HTML put first;
//! - [`compare`](mod@compare): what regressed between two runs beyond a threshold;
//! - [`agree`](mod@agree): whether two runs give the same headline figures (ratio per cell,
//!   ±tolerance, overlapping intervals, rankings that flipped);
//! - [`l7`]: seed 004's application-traffic table (an L7 results document's `table`), as
//!   Markdown and as its own HTML page.

pub mod agree;
pub mod compare;
pub mod csv;
pub mod html;
pub mod l7;
pub mod markdown;
pub mod summary;
pub mod svg;

pub use agree::{agree, Agreement};
pub use compare::{compare, Comparison};

#[cfg(test)]
pub(crate) mod tests {
    use crate::results::RunResults;

    /// The full simulated demo run: every procedure, two devices, some tester-limited results.
    pub(crate) fn sample_run() -> RunResults {
        crate::demo::simulated_run(1, vec!["test".into()]).expect("demo run")
    }

    /// A run shaped like `make demo`'s (docs/suites/demo.toml) on simulated devices: two
    /// topologies, five devices, NDR/PDR at 64 B and 1518 B in rounds (the bench's block order,
    /// each block a fresh simulated device), the generator's limit per topology, and device-cost
    /// rows at the loads [`crate::device_cost::GroupLoads`] chooses in that order (the busy
    /// figures are made up from a per-device cost per packet).
    pub(crate) fn demo_like_run() -> RunResults {
        use crate::device_cost::{estimate_capacity, DeviceCostRow, GroupLoads};
        use crate::results::{CalibratedLimit, GeneratorInfo, Provenance};
        use crate::sim::{SimDut, SimModel};
        use crate::suite::{found_throughput, run_for_dut_observed, FrameSize, Suite};
        let goals = "goals = [{ name = \"NDR\", relative_width = 0.05 }, { name = \"PDR\", loss_percent = 0.5, relative_width = 0.05 }]";
        let suite = Suite::parse(&format!(
            "name = \"demo-like\"\nframe_sizes = [64, 1518]\nline_rate_gbps = 10\n\
             [[dut]]\nname = \"vecswitch-xconnect\"\ntopology = \"phy2phy-memif\"\n\
             [[dut]]\nname = \"testpmd-io\"\ntopology = \"phy2phy-memif\"\n\
             [[dut]]\nname = \"vecswitch-xconnect\"\ntopology = \"phy2phy-veth\"\n\
             [[dut]]\nname = \"linux-bridge\"\ntopology = \"phy2phy-veth\"\n\
             [[dut]]\nname = \"ovs\"\ntopology = \"phy2phy-veth\"\n\
             [[test]]\nprocedure = \"mlrsearch\"\nid = \"phy2phy_ndrpdr\"\nframe_sizes = [64]\nsearches = 3\nmin_percent = 0.1\n{goals}\n\
             [[test]]\nprocedure = \"mlrsearch\"\nid = \"phy2phy_ndrpdr\"\nframe_sizes = [1518]\nsearches = 2\nmin_percent = 0.1\n{goals}\n\
             [device_cost]\nload_percent = 50\nrepetitions = 1\n"
        ))
        .expect("demo-like suite");
        // (capacity fps at 64 B, spread, cycles/packet) per [[dut]]; the generator's limit per
        // topology and size.
        let devices: [(f64, f64, f64); 5] = [
            (1.0e6, 0.15, 900.0),
            (5.7e6, 0.6, 250.0),
            (0.23e6, 0.2, 9_000.0),
            (0.9e6, 0.05, 3_000.0),
            (0.05e6, 0.1, 40_000.0),
        ];
        let limit = |topo: &str, size: &FrameSize| match (topo, size) {
            ("phy2phy-memif", FrameSize::Bytes(64)) => 7.36e6,
            ("phy2phy-memif", _) => 0.81e6,
            (_, FrameSize::Bytes(64)) => 0.65e6,
            _ => 0.4e6,
        };
        let mut run = RunResults::new(Provenance::collect(vec!["test".into()], None));
        let mut limits = Vec::new();
        for topo in ["phy2phy-memif", "phy2phy-veth"] {
            for size in &suite.frame_sizes {
                let FrameSize::Bytes(b) = size else { continue };
                limits.push(CalibratedLimit {
                    frame_size: *b,
                    max_fps: limit(topo, size),
                    mix: None,
                    topology: Some(topo.into()),
                    method: Some("simulated".into()),
                    latency_floor: None,
                });
            }
        }
        run.generator = Some(GeneratorInfo {
            name: "vecswitch-gen".into(),
            calibrated_limits: limits,
        });
        let mut loads = GroupLoads::new(&suite);
        for (r, i, size) in suite.blocks() {
            let dut = &suite.duts[i];
            let (cap, spread, cpp) = devices[i];
            let line = suite.line(&size).unwrap();
            let cap = if size == FrameSize::Bytes(64) {
                cap
            } else {
                (cap * 0.8).min(line.max_fps())
            };
            let lim = limit(&dut.topology, &size);
            let mut m = SimDut::new(
                SimModel::Noisy {
                    capacity_fps: cap,
                    spread,
                },
                7 + u64::from(r) * 10 + i as u64,
            )
            .with_tester_limit(lim)
            .with_line_rate(line.max_fps());
            let out = run_for_dut_observed(
                &suite.round(r),
                dut,
                &size,
                Some(lim),
                &mut m,
                &mut |_, _, _| Ok(()),
                &mut (),
            )
            .expect("simulated block");
            loads.note_throughput(
                i,
                &size,
                out.records
                    .iter()
                    .find_map(|t| found_throughput(&t.outcome)),
            );
            for mut t in out.records {
                t.topology = Some(dut.topology.clone());
                t.generator_limit_fps = Some(lim);
                run.tests.push(t);
            }
            if let Some(l) = loads.load(i, &size, Some(lim)) {
                let busy = l.fps * cpp / 2.6e9;
                run.device_cost.push(DeviceCostRow {
                    device: dut.name.clone(),
                    topology: dut.topology.clone(),
                    frame_size: size.label(),
                    intended_fps: l.fps,
                    offered_fps: l.fps,
                    received_fps: l.fps,
                    device_rx_fps: Some(l.fps),
                    busy_fraction: Some(busy),
                    cycles_per_packet: Some(cpp),
                    estimated_capacity_fps: estimate_capacity(l.fps, busy),
                    idle_poll_fraction: None,
                    method: "simulated".into(),
                    repetitions: 1,
                    tester_limited: false,
                    note: None,
                    round: Some(r + 1),
                    load_basis: Some(l.basis),
                });
            }
        }
        run
    }

    /// Writes the demo-like run's reports where `VECSWITCH_REPORT_FIXTURE` says (a directory),
    /// to look at them in a browser: `VECSWITCH_REPORT_FIXTURE=/tmp/r cargo test -p
    /// vecswitch-lab write_demo_like_report -- --ignored`.
    #[test]
    #[ignore = "writes files; run by hand to look at the report"]
    fn write_demo_like_report() {
        let dir = std::path::PathBuf::from(
            std::env::var("VECSWITCH_REPORT_FIXTURE").expect("VECSWITCH_REPORT_FIXTURE=DIR"),
        );
        std::fs::create_dir_all(&dir).unwrap();
        let run = demo_like_run();
        std::fs::write(
            dir.join("results.json"),
            serde_json::to_string_pretty(&run).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.join("report.html"), super::html::render(&run)).unwrap();
        std::fs::write(dir.join("report.md"), super::markdown::render(&run)).unwrap();
    }
}
