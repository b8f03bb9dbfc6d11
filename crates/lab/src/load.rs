//! Offered load and line rate: [`Load`] (frames per second) and [`LineRate`] (a nominal link speed
//! for one frame size, which turns percentages of line rate into frames per second and back).
//!
//! Conventions, stated once for the whole lab:
//! - Frame sizes are Ethernet frame sizes **including the 4-byte FCS**, as RFC 2544 §9 lists them
//!   (64, 128, 256, 512, 1024, 1280, 1518). A "64-byte frame" carries 60 bytes before the FCS.
//! - Line rate accounts for **20 bytes of per-frame overhead on the wire**: 7 bytes preamble, 1 byte
//!   start-of-frame delimiter and a 12-byte minimum inter-frame gap (IEEE 802.3 §4.4.2; RFC 2544
//!   Appendix B uses the same arithmetic). So 10 Gb/s carries 14 880 952 frames/s of 64 bytes.
//! - Megabits per second reported as `*_mbps` count the frame bits only (frame size × 8, without
//!   preamble and gap), as VSPERF's `throughput_rx_mbps` does.

use serde::{Deserialize, Serialize};

use crate::LabError;

/// Bytes on the wire per frame besides the frame itself: preamble (7) + SFD (1) + IFG (12).
pub const WIRE_OVERHEAD_BYTES: u32 = 20;

/// The RFC 2544 §9 frame sizes for Ethernet (bytes, FCS included).
pub const RFC2544_FRAME_SIZES: [u32; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// An offered (intended) rate in frames per second, summed over all the streams of a trial.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
pub struct Load {
    pub fps: f64,
}

impl Load {
    /// A load of `fps` frames per second.
    pub fn fps(fps: f64) -> Load {
        Load { fps }
    }

    /// `pct` percent of `line`'s maximum frame rate.
    pub fn percent_of(pct: f64, line: &LineRate) -> Load {
        Load {
            fps: line.max_fps() * pct / 100.0,
        }
    }

    /// Frames this load sends in `secs` seconds, rounded to the nearest frame.
    pub fn frames_in(&self, secs: f64) -> u64 {
        (self.fps * secs).round().max(0.0) as u64
    }
}

/// A nominal line rate for one frame size: `ports` links of `bits_per_second` each (2 for a
/// bidirectional test across two ports, as VSPERF counts `throughput_rx_percent`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LineRate {
    /// Speed of one link in bits per second (10e9 for 10GE).
    pub bits_per_second: f64,
    /// Frame size in bytes, FCS included.
    pub frame_size: u32,
    /// Number of links the load is spread over (1 = unidirectional, 2 = bidirectional).
    pub ports: u32,
    /// Mean frame size of a frame-size mix (IMIX): the line-rate maths uses it instead of
    /// `frame_size` (which then holds the mean rounded, for charts and sorting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_frame_bytes: Option<f64>,
}

impl LineRate {
    /// Validates and builds a line rate. Frames must be 64..=16384 bytes (Ethernet minimum to jumbo).
    pub fn new(bits_per_second: f64, frame_size: u32, ports: u32) -> Result<LineRate, LabError> {
        if !(bits_per_second.is_finite() && bits_per_second > 0.0) {
            return Err(LabError::invalid(
                "line_rate_bps",
                bits_per_second,
                "a positive number of bits/s",
            ));
        }
        if !(64..=16384).contains(&frame_size) {
            return Err(LabError::invalid(
                "frame_size",
                frame_size,
                "64..=16384 bytes including FCS",
            ));
        }
        if ports == 0 {
            return Err(LabError::invalid("ports", ports, "at least 1"));
        }
        Ok(LineRate {
            bits_per_second,
            frame_size,
            ports,
            mean_frame_bytes: None,
        })
    }

    /// The line rate of a frame-size mix whose mean frame size (FCS included) is `mean_bytes`:
    /// a mix of frames sent back to back at line rate carries `rate / ((mean + 20) × 8)` frames
    /// per second on average, so the maths is that of a fixed size equal to the mean.
    pub fn for_mix(
        bits_per_second: f64,
        mean_bytes: f64,
        ports: u32,
    ) -> Result<LineRate, LabError> {
        if !(mean_bytes.is_finite() && (64.0..=16384.0).contains(&mean_bytes)) {
            return Err(LabError::invalid(
                "frame_size (mean of the mix)",
                mean_bytes,
                "64..=16384 bytes including FCS",
            ));
        }
        let mut l = LineRate::new(bits_per_second, mean_bytes.round() as u32, ports)?;
        l.mean_frame_bytes = Some(mean_bytes);
        Ok(l)
    }

    /// 10 Gb/s, one direction.
    pub fn ten_gig(frame_size: u32) -> LineRate {
        LineRate {
            bits_per_second: 10e9,
            frame_size,
            ports: 1,
            mean_frame_bytes: None,
        }
    }

    /// Bytes per frame the maths uses: the fixed size, or a mix's mean.
    pub fn frame_bytes(&self) -> f64 {
        self.mean_frame_bytes.unwrap_or(f64::from(self.frame_size))
    }

    /// Maximum theoretical frame rate over all ports (RFC 9004 §3 "Max Theoretical Frame Rate").
    pub fn max_fps(&self) -> f64 {
        let bits_per_frame = (self.frame_bytes() + f64::from(WIRE_OVERHEAD_BYTES)) * 8.0;
        self.bits_per_second * f64::from(self.ports) / bits_per_frame
    }

    /// `fps` as a percentage of [`max_fps`](Self::max_fps).
    pub fn percent(&self, fps: f64) -> f64 {
        100.0 * fps / self.max_fps()
    }

    /// Megabits per second of frame data (no preamble/IFG) at `fps`.
    pub fn mbps(&self, fps: f64) -> f64 {
        fps * self.frame_bytes() * 8.0 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_gig_64_byte_frame_rate_matches_rfc2544_appendix_b_arithmetic() {
        // 10e9 / (84 * 8) = 14 880 952.38
        let l = LineRate::ten_gig(64);
        assert!((l.max_fps() - 14_880_952.38).abs() < 0.01);
        assert!((LineRate::ten_gig(1518).max_fps() - 812_743.82).abs() < 0.01);
    }

    #[test]
    fn vsperf_example_percent_and_mbps_agree() {
        // seed 003: 22 626 032.812 fps bidirectional 64 B = 76.023 % and 11 584.529 Mb/s.
        let l = LineRate::new(10e9, 64, 2).unwrap();
        assert!((l.percent(22_626_032.812) - 76.023).abs() < 0.001);
        assert!((l.mbps(22_626_032.812) - 11_584.529).abs() < 0.001);
    }

    #[test]
    fn invalid_line_rate_names_the_field() {
        let e = LineRate::new(10e9, 40, 1).unwrap_err().to_string();
        assert!(e.contains("frame_size") && e.contains("40"), "{e}");
        assert!(LineRate::new(-1.0, 64, 1).is_err());
        assert!(LineRate::new(1e9, 64, 0).is_err());
    }

    #[test]
    fn imix_line_rate_uses_the_mean_frame_size() {
        // Simple IMIX 64:7, 570:4, 1518:1 → mean 4246/12 = 353.83 B; 10e9 / ((353.83 + 20) × 8).
        let mean = (64.0 * 7.0 + 570.0 * 4.0 + 1518.0) / 12.0;
        let l = LineRate::for_mix(10e9, mean, 1).unwrap();
        assert_eq!(l.frame_size, 354);
        assert!((l.max_fps() - 10e9 / ((mean + 20.0) * 8.0)).abs() < 1e-6);
        assert!((l.mbps(1e6) - mean * 8.0).abs() < 1e-9);
        assert!(LineRate::for_mix(10e9, 20.0, 1)
            .unwrap_err()
            .to_string()
            .contains("mean"));
    }

    #[test]
    fn percent_load_round_trips() {
        let l = LineRate::ten_gig(512);
        let load = Load::percent_of(37.5, &l);
        assert!((l.percent(load.fps) - 37.5).abs() < 1e-9);
        assert_eq!(Load::fps(1000.0).frames_in(2.0), 2000);
    }
}
