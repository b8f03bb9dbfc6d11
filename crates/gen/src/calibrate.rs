//! Calibration: what the generator itself can do on its ports, without a device under test.
//!
//! [`calibrate`] loops the generator's transmit port to its own receive port (a memif pair connected
//! to itself, a veth pair, a loopback pair) and, for each frame size, runs two trials: one as fast as
//! possible (the **maximum rate** the generator and its ports sustain, sent and received) and one at a
//! low rate (the **latency floor**: what the tester's own path adds to every latency it reports).
//! Results a DUT test reports above these figures are the DUT's; at or near them they are the
//! tester's, and the lab should say so.

use std::time::Duration;

use serde::Serialize;

use crate::analyze::Latency;
use crate::engine::{Generator, TrialLength, TrialSpec};
use crate::rate::Rate;
use crate::size::SizeSpec;
use crate::stream::StreamSpec;
use crate::GenError;

/// What calibration measured for one frame size.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationPoint {
    /// Frame size with FCS.
    pub size: u16,
    /// Frames per second offered in the as-fast-as-possible trial.
    pub max_tx_fps: f64,
    /// Frames per second received back in that trial (over the same time).
    pub max_rx_fps: f64,
    /// Frames lost in that trial (the loop itself dropped them: ring full on the receive side).
    pub max_lost: u64,
    /// Offered rate of the latency-floor trial (frames/s).
    pub floor_fps: f64,
    /// Latency of the low-rate trial: the floor the tester adds.
    pub floor_latency: Latency,
    /// Latency at maximum rate (queues full).
    pub max_rate_latency: Latency,
}

/// Calibration of a generator's ports.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    pub tx_port: String,
    pub rx_port: String,
    pub points: Vec<CalibrationPoint>,
}

/// Runs calibration on `gen`: port 0 sends, port 1 (or port 0 if there is only one) receives; each
/// size gets `duration` at maximum rate and `duration` at `floor_rate` (e.g. 10 kpps).
pub fn calibrate(
    gen: &mut Generator,
    template: &StreamSpec,
    sizes: &[u16],
    duration: Duration,
    floor_rate: Rate,
) -> Result<CalibrationReport, GenError> {
    let rx = if gen.ports().len() > 1 { 1 } else { 0 };
    let mut points = Vec::new();
    for &size in sizes {
        let mut s = template.clone();
        s.tx_port = 0;
        s.rx_port = rx;
        s.size = SizeSpec::Fixed(size);
        let mut max = TrialSpec::new(vec![s.clone()], Rate::Max, TrialLength::Duration(duration));
        max.drain = Duration::from_millis(200);
        let rmax = gen.run_trial(&max)?;
        let floor = TrialSpec::new(vec![s], floor_rate, TrialLength::Duration(duration));
        let rfloor = gen.run_trial(&floor)?;
        let secs = rmax.tx_seconds.max(1e-9);
        points.push(CalibrationPoint {
            size: rmax.streams[0].sizes.first().copied().unwrap_or(size),
            max_tx_fps: rmax.ports[0].offered_fps,
            max_rx_fps: rmax.rx as f64 / secs,
            max_lost: rmax.lost,
            floor_fps: rfloor.ports[0].offered_fps,
            floor_latency: rfloor.streams[0].rx.latency,
            max_rate_latency: rmax.streams[0].rx.latency,
        });
    }
    Ok(CalibrationReport {
        tx_port: gen.ports()[0].name().to_string(),
        rx_port: gen.ports()[rx].name().to_string(),
        points,
    })
}
