//! Generator calibration per run: the generator's own ceiling on a topology's kind of link, with no
//! DUT in the path, so every result can show it beside the DUT's figure.
//!
//! [`calibrate_testbed`] loops the generator through the same kind of link the DUT tests use and
//! runs one trial at the maximum rate ([`Rate::Max`]) for a frame size or mix:
//!
//! | topology link | the loop |
//! |---|---|
//! | memif | a memif server and client on one socket of the run directory, both in this process |
//! | veth | the topology's own first veth pair straight through: `gen0` (generator namespace) sends, `dut0` (DUT namespace) receives — before the DUT starts, with the same RPS setting |
//!
//! A second, short trial through the same loop at [`FLOOR_RATE_FPS`] measures the generator's own
//! **latency floor** ([`Calibration::latency_floor`]): what it adds to every latency it reports
//! (its timestamp points, polling, the port's copies), shown beside latency results.
//!
//! The limit is the rate received back through the loop ([`Calibration::limit_fps`]): the generator
//! sends and receives on one thread in DUT tests too, so that is the most a DUT test can show. The
//! thread is pinned to the generator's CPU first, as in the tests. [`calibrate_ports`] does the
//! measuring on any pair of ports (tests use an in-process loopback pair).

use std::time::Duration;

use serde::Serialize;
use vecswitch_gen::{Generator, Rate, SizeSpec, StreamSpec, TrialLength, TrialReport, TrialSpec};
use vecswitch_lab::results::LatencyFloor;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::Port;

use crate::error::{Error, Result};
use crate::topology::{Link, Testbed};

/// What one calibration trial measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// `64` or `imix` (the generator's size name).
    pub size: String,
    /// Frames/s the generator offered at maximum rate.
    pub tx_fps: f64,
    /// Frames/s received back through the loop, over the same time.
    pub rx_fps: f64,
    /// Frames the loop lost (receive ring full): the receiving side could not keep up.
    pub lost: u64,
    /// Length of the trial.
    pub duration: Duration,
    /// The loop, e.g. `memif server/client pair in one process`.
    pub method: String,
    /// The generator's own latency through the loop at [`FLOOR_RATE_FPS`] (None if nothing came
    /// back).
    pub latency_floor: Option<LatencyFloor>,
}

/// The low rate of the latency-floor trial (frames/s): far below any limit, so no queue builds.
pub const FLOOR_RATE_FPS: f64 = 10_000.0;
/// Frames of the latency-floor trial.
pub const FLOOR_FRAMES: u64 = 2_000;

impl Calibration {
    /// The generator's ceiling: what it sent **and** received per second through the loop.
    pub fn limit_fps(&self) -> f64 {
        self.rx_fps.min(self.tx_fps)
    }

    /// Maps a maximum-rate trial report (see the module doc).
    pub fn from_report(
        size: &SizeSpec,
        r: &TrialReport,
        duration: Duration,
        method: &str,
    ) -> Calibration {
        let secs = r.tx_seconds.max(1e-9);
        Calibration {
            size: size.name(),
            tx_fps: r.tx as f64 / secs,
            rx_fps: r.rx as f64 / secs,
            lost: r.lost,
            duration,
            method: method.to_string(),
            latency_floor: None,
        }
    }
}

/// Runs one maximum-rate trial of `size` from port 0 to port 1 of `ports` (a loop without DUT).
pub fn calibrate_ports(
    ports: Vec<Box<dyn Port>>,
    size: &SizeSpec,
    duration: Duration,
    method: &str,
) -> Result<Calibration> {
    let gen_err = |what: &str, e: vecswitch_gen::GenError| Error::Invalid {
        field: "generator calibration",
        value: format!("{what}: {e}"),
        expected: "a loop the generator can send through".into(),
    };
    let mut gen = Generator::new(ports).map_err(|e| gen_err("ports", e))?;
    gen.wait_link(Duration::from_secs(5))
        .map_err(|e| gen_err("link", e))?;
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size.clone();
    let mut spec = TrialSpec::new(vec![s], Rate::Max, TrialLength::Duration(duration));
    spec.drain = Duration::from_millis(100);
    let r = gen.run_trial(&spec).map_err(|e| gen_err("trial", e))?;
    let mut c = Calibration::from_report(size, &r, duration, method);
    // The latency floor: a short trial at a low rate through the same loop.
    let mut s = StreamSpec::ipv4(0, 1);
    s.size = size.clone();
    let mut spec = TrialSpec::new(
        vec![s],
        Rate::Pps(FLOOR_RATE_FPS),
        TrialLength::Count(FLOOR_FRAMES),
    );
    spec.drain = Duration::from_millis(100);
    let r = gen
        .run_trial(&spec)
        .map_err(|e| gen_err("latency floor", e))?;
    let m = crate::measurer::trial_result(
        vecswitch_lab::Load::fps(FLOOR_RATE_FPS),
        Duration::from_secs_f64(FLOOR_FRAMES as f64 / FLOOR_RATE_FPS),
        &r,
    );
    c.latency_floor = m
        .latency
        .as_ref()
        .map(|l| LatencyFloor::from_stats(FLOOR_RATE_FPS, l));
    Ok(c)
}

/// Calibrates the generator on `tb`'s kind of link (see the module doc). Call it before
/// [`Testbed::start`]: on veth it borrows the DUT's first interface.
pub fn calibrate_testbed(tb: &Testbed, size: &SizeSpec, duration: Duration) -> Result<Calibration> {
    crate::measurer::pin_current_thread(tb.wiring().cores.generator)?;
    let w = tb.wiring();
    match w.topology.link() {
        Link::Memif => {
            let sock = tb.run_dir().file("calibrate.sock").display().to_string();
            let port = |name: &str, role| -> Result<Box<dyn Port>> {
                let p = MemifPort::new(MemifConfig::new(name, &sock, 0, role)).map_err(|e| {
                    Error::Port {
                        port: name.to_string(),
                        source: Box::new(e),
                    }
                })?;
                Ok(Box::new(p))
            };
            let ports = vec![
                port("cal-client", Role::Client)?,
                port("cal-server", Role::Server)?,
            ];
            let r = calibrate_ports(
                ports,
                size,
                duration,
                "memif server/client pair in one process (no DUT)",
            );
            let _ = std::fs::remove_file(&sock);
            r
        }
        Link::Veth => {
            let (Some(gen0), Some(dut0)) = (w.gen_ports.first(), w.dut_ports.first()) else {
                return Err(Error::Invalid {
                    field: "calibration topology",
                    value: w.topology.to_string(),
                    expected: "a topology the lab built (an external device's link cannot be looped without it)".into(),
                });
            };
            let tx = crate::gen_ports::open_port(gen0)?;
            let rx = crate::gen_ports::open_port(dut0)?;
            calibrate_ports(
                vec![tx, rx],
                size,
                duration,
                "veth pair straight through, AF_PACKET both ends (no DUT)",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_ports::loopback;

    #[test]
    fn loopback_calibration_maps_the_report() {
        let (a, b) = loopback::pair("a", "b");
        let c = calibrate_ports(
            vec![Box::new(a), Box::new(b)],
            &SizeSpec::imix(),
            Duration::from_millis(200),
            "loopback",
        )
        .unwrap();
        assert_eq!(c.size, "imix");
        assert_eq!(c.method, "loopback");
        assert!(c.tx_fps > 0.0 && c.rx_fps > 0.0, "{c:?}");
        // The limit is what came back, never more than what was sent.
        assert!(c.limit_fps() <= c.tx_fps && c.limit_fps() == c.rx_fps.min(c.tx_fps));
        assert_eq!(c.duration, Duration::from_millis(200));
        // The latency floor came back through the loop at the low rate.
        let f = c.latency_floor.expect("latency floor measured");
        assert_eq!(f.rate_fps, FLOOR_RATE_FPS);
        assert!(
            f.samples > 0 && f.min_ns <= f.p50_ns && f.p50_ns <= f.p99_ns,
            "{f:?}"
        );
    }
}
