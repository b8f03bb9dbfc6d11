//! Packet capture on a switch port ([`crate::Switch::capture`]): every frame the port receives
//! (right after `rx_burst`, before any node) and every frame the switch hands to its `tx_burst`
//! (including frames the port then fails to send) is written to a pcap file with
//! `ports::pcap::PcapWriter`, optionally only the first `count` frames.
//!
//! The switch keeps the capture beside the port instead of wrapping the port in
//! `ports::pcap::Capture`: starting a capture then never has to take the port out of the switch (a
//! failure to create the file leaves everything as it was), and a capture can be stopped, which
//! hands the file back complete, without unwrapping the port.
//!
//! Opening never blocks and never follows a link (issue 14 item 1): the file is opened with
//! `O_NOFOLLOW | O_NONBLOCK` (a symlink fails with ELOOP; a FIFO without a reader fails with ENXIO
//! instead of blocking the worker) and must then be a regular file, which is only then truncated.
//! The control plane (`vecswitch-control`) additionally creates the file exclusively inside the
//! configured capture directory before asking the switch to capture into it.

use std::fs::{File, OpenOptions};
use std::io::BufWriter;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;
use vecswitch_ports::pcap::{now_ns, PcapError, PcapWriter, DEFAULT_SNAPLEN};

/// Opens `path` for writing without following a symlink or blocking on a FIFO, refuses anything
/// but a regular file, and truncates it (creating it if missing).
fn open_regular(path: &Path) -> Result<File, PcapError> {
    let io = |source: std::io::Error| PcapError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file (a capture is written only to a regular file)",
        )));
    }
    file.set_len(0).map_err(io)?;
    Ok(file)
}

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
    /// Creates (truncating) the pcap file at `path`: a regular file, reached without following a
    /// symlink, opened without blocking (see the module doc).
    pub fn create(path: &Path, limit: Option<u64>) -> Result<PortCapture, PcapError> {
        let file = open_regular(path)?;
        Ok(PortCapture {
            writer: PcapWriter::new(BufWriter::with_capacity(1 << 16, file), DEFAULT_SNAPLEN)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlink_and_fifo_are_refused_without_blocking_regular_file_truncated() {
        let d = std::env::temp_dir().join(format!("vsw-pcap-open-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let victim = d.join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        let e = PortCapture::create(&d.join("link"), None).unwrap_err();
        assert!(e.to_string().contains("link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        // A FIFO with no reader: refused at once (ENXIO), not a blocked thread.
        let fifo = d.join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo (coreutils)")
            .success());
        assert!(PortCapture::create(&fifo, None).is_err());
        // A directory is not a regular file either.
        assert!(PortCapture::create(&d, None).is_err());
        // A regular file is truncated and gets the pcap header.
        let f = d.join("f.pcap");
        std::fs::write(&f, vec![1u8; 1000]).unwrap();
        let mut c = PortCapture::create(&f, None).unwrap();
        c.finish().unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 24);
        let _ = std::fs::remove_dir_all(&d);
    }
}
