//! Scale sweep: run a procedure once per table size (MAC entries, FIB routes) or flow count.
//!
//! Seed 000 measures forwarding with 1, 2 000 and 20 000 MAC/IPv4 entries ("Virtual Switch FIB
//! Scalability"); seed 003 with 1, 4 096 and 1 M flows. [`scale_sweep`] takes the list of scale
//! points, a `reconfigure` callback that sets the DUT up for a point (install N MAC entries, make
//! the generator send N flows…) and a `procedure` to run there, and returns one [`ScalePoint`]
//! per scale. The callback and the procedure both get the measurer, so a simulated DUT can be
//! reconfigured in tests exactly as a real driver reconfigures a switch.

use serde::{Deserialize, Serialize};

use crate::measurer::Measurer;
use crate::LabError;

/// Default MAC-table sizes from 2 to 1 000 000.
pub const DEFAULT_SCALE_POINTS: [u64; 8] =
    [2, 100, 1_000, 2_000, 10_000, 20_000, 100_000, 1_000_000];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScalePoint<T> {
    pub scale: u64,
    pub result: T,
}

pub fn scale_sweep<M, T, R, P>(
    m: &mut M,
    points: &[u64],
    mut reconfigure: R,
    mut procedure: P,
) -> Result<Vec<ScalePoint<T>>, LabError>
where
    M: Measurer + ?Sized,
    R: FnMut(&mut M, u64) -> Result<(), LabError>,
    P: FnMut(&mut M) -> Result<T, LabError>,
{
    if points.is_empty() {
        return Err(LabError::invalid(
            "scale_points",
            "[]",
            "at least one table size or flow count",
        ));
    }
    let mut out = Vec::with_capacity(points.len());
    for &scale in points {
        reconfigure(m, scale)?;
        out.push(ScalePoint {
            scale,
            result: procedure(m)?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::throughput::{throughput, ThroughputConfig};
    use crate::sim::{SimDut, SimModel};
    use std::time::Duration;

    #[test]
    fn throughput_per_table_size_follows_the_reconfigured_dut() {
        // A DUT whose capacity halves for every 10x more MAC entries above 1000.
        let cap = |n: u64| {
            if n <= 1000 {
                2e6
            } else {
                2e6 / (n as f64 / 1000.0).log10().exp2()
            }
        };
        let mut dut = SimDut::new(SimModel::Fixed { capacity_fps: 1.0 }, 1);
        let cfg = ThroughputConfig::new(0.0, 4e6, Duration::from_secs(1));
        let pts = scale_sweep(
            &mut dut,
            &DEFAULT_SCALE_POINTS,
            |d, n| {
                d.set_model(SimModel::Fixed {
                    capacity_fps: cap(n),
                });
                Ok(())
            },
            |d| throughput(d, &cfg),
        )
        .unwrap();
        assert_eq!(pts.len(), DEFAULT_SCALE_POINTS.len());
        for p in &pts {
            let x = p.result.throughput_fps.unwrap();
            assert!(
                x <= cap(p.scale) && cap(p.scale) - x <= cfg.resolution_fps,
                "{} {x}",
                p.scale
            );
        }
        assert!(scale_sweep(&mut dut, &[], |_, _| Ok(()), |_| Ok(())).is_err());
    }
}
