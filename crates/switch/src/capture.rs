//! Packet capture on a switch port ([`crate::Switch::capture`]): every frame the port receives
//! (right after `rx_burst`, before any node) and every frame the switch hands to its `tx_burst`
//! (including frames the port then fails to send) is written to a pcap file with
//! `ports::pcap::PcapWriter`, optionally only the first `count` frames.
//!
//! The switch keeps the capture beside the port instead of wrapping the port in
//! `ports::pcap::Capture`: starting a capture then never has to take the port out of the switch (a
//! failure to create the file leaves everything as it was), and a capture can be stopped, which
//! hands the file back complete, without unwrapping the port.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;
use vecswitch_ports::pcap::{now_ns, PcapError, PcapWriter};

/// `show ports`' view of a capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureInfo {
    pub path: String,
    /// Frames written so far.
    pub captured: u64,
    /// Most frames to write (`None`: until stopped).
    pub limit: Option<u64>,
    /// Still writing (not at its limit, no write error).
    pub active: bool,
    /// The write error that stopped the capture, if any.
    pub error: Option<String>,
}

/// A capture in progress on one port.
#[derive(Debug)]
pub struct PortCapture {
    writer: PcapWriter<BufWriter<File>>,
    path: PathBuf,
    limit: Option<u64>,
    error: Option<String>,
}

impl PortCapture {
    /// Creates (truncating) the pcap file at `path`.
    pub fn create(path: &Path, limit: Option<u64>) -> Result<PortCapture, PcapError> {
        Ok(PortCapture {
            writer: PcapWriter::create(path)?,
            path: path.to_path_buf(),
            limit,
            error: None,
        })
    }

    /// Whether frames are still being written.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.error.is_none() && !matches!(self.limit, Some(l) if self.writer.frames_written() >= l)
    }

    /// Writes `pkts` (up to the limit). A write error stops the capture and is kept for `show`.
    pub fn record(&mut self, pool: &Pool, pkts: &[u32]) {
        if pkts.is_empty() || !self.is_active() {
            return;
        }
        let ts = now_ns();
        for &h in pkts {
            if !self.is_active() {
                break;
            }
            if let Err(e) = self.writer.write_packet(ts, pool, h) {
                self.error = Some(e.to_string());
                return;
            }
        }
        if !self.is_active() {
            // Reached the limit: make the file complete now rather than when the capture is dropped.
            if let Err(e) = self.writer.flush() {
                self.error = Some(e.to_string());
            }
        }
    }

    /// Flushes what was written.
    pub fn finish(&mut self) -> Result<(), PcapError> {
        self.writer.flush()
    }

    pub fn info(&self) -> CaptureInfo {
        CaptureInfo {
            path: self.path.display().to_string(),
            captured: self.writer.frames_written(),
            limit: self.limit,
            active: self.is_active(),
            error: self.error.clone(),
        }
    }
}
