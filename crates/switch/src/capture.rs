//! Packet capture on a switch port ([`crate::Switch::capture`], [`crate::Switch::start_capture`]):
//! every frame the port receives (right after `rx_burst`, before any node) and every frame the
//! switch hands to its `tx_burst` (including frames the port then fails to send) is written to a
//! pcap file, optionally only the first `count` frames.
//!
//! ## The dataplane never writes (issue 14 item 1)
//!
//! A capture has two halves:
//! - [`PortCapture`] sits beside the port on the worker. Per burst it copies the frames (each cut
//!   to the snap length) into one batch and offers it to a bounded channel with `try_send`: it
//!   never blocks, never touches a file, and a batch the writer cannot take now (the channel holds
//!   [`CAPTURE_QUEUE_BATCHES`] batches or [`CAPTURE_QUEUE_BYTES`] bytes of frames) is not queued:
//!   its frames are counted as [`CaptureInfo::dropped`] (`show ports`, and `capture-dropped`
//!   under `port NAME` in `show errors`). Forwarding does not wait for the capture.
//! - [`CaptureWriter`] is the other end, run on a thread of whoever started the capture (the
//!   control plane's, for `ctl capture`): it writes the batches with `ports::pcap::PcapWriter`,
//!   flushes when the queue runs dry for a moment, returns the batch buffers for reuse, and ends
//!   when the worker side closes the channel (limit reached, capture stopped or replaced, port
//!   deleted), flushing the file. A write error ends it too; the error is shown and the worker
//!   side stops capturing.
//!
//! So a slow disk, a full file system or a stalled NFS mount delays only the writer thread and
//! costs capture records, counted, never forwarded frames.
//!
//! The switch keeps the capture beside the port instead of wrapping the port in
//! `ports::pcap::Capture`: starting a capture then never has to take the port out of the switch (a
//! failure to create the file leaves everything as it was), and a capture can be stopped, which
//! hands the file back complete, without unwrapping the port.
//!
//! ## Files
//!
//! [`PortCapture::create`] opens a path with `O_NOFOLLOW | O_NONBLOCK` (a symlink fails with
//! ELOOP; a FIFO without a reader fails with ENXIO instead of blocking) and accepts only a regular
//! file, which it then truncates. The control plane (`vecswitch-control`) does better: it creates
//! the file exclusively inside the configured capture directory on its own thread and hands the
//! open file to [`PortCapture::start`], so the worker never opens a path at all.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;
use vecswitch_ports::pcap::{now_ns, PcapError, PcapWriter, DEFAULT_SNAPLEN};

use crate::SwitchError;

/// Most batches (one per burst recorded) waiting for the writer.
pub const CAPTURE_QUEUE_BATCHES: usize = 64;
/// Most bytes of frame data waiting for the writer (what a stalled writer can cost in memory).
pub const CAPTURE_QUEUE_BYTES: usize = 16 << 20;
/// The writer flushes its file when no batch came for this long.
const WRITER_IDLE_FLUSH: Duration = Duration::from_millis(200);

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

/// `e` naming `path` (the pcap writer does not know it).
fn with_path(e: PcapError, path: &Path) -> PcapError {
    match e {
        PcapError::Io { source, .. } => PcapError::Io {
            path: path.display().to_string(),
            source,
        },
        e => e,
    }
}

/// Refuses a frame count of 0 (a capture of nothing); `None` captures until stopped.
pub fn check_count(count: Option<u64>) -> Result<(), SwitchError> {
    if count == Some(0) {
        return Err(SwitchError::InvalidValue {
            field: "count",
            value: "0".into(),
            accepted: "at least 1 frame, or no count to capture until stopped",
        });
    }
    Ok(())
}

/// Why a capture could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error(transparent)]
    Pcap(#[from] PcapError),
    #[error("cannot start the pcap writer thread: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the pcap writer stopped: {0}")]
    Writer(String),
    #[error("the pcap writer has not finished within {within:?} ({written} of {captured} frames written so far; it goes on in the background)")]
    Slow {
        within: Duration,
        written: u64,
        captured: u64,
    },
}

/// `show ports`' view of a capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureInfo {
    pub path: String,
    /// Frames taken for the file (handed to the writer).
    pub captured: u64,
    /// Frames the writer has written so far (equals `captured` once the capture is finished).
    #[serde(default)]
    pub written: u64,
    /// Frames not captured because the writer had not taken the earlier ones yet (its queue was
    /// full): never in the file, never a forwarded frame lost.
    #[serde(default)]
    pub dropped: u64,
    /// Most frames to write (`None`: until stopped).
    pub limit: Option<u64>,
    /// Still capturing (not at its limit, no write error).
    pub active: bool,
    /// The write error that stopped the capture, if any.
    pub error: Option<String>,
}

/// Frames of one recorded burst, copied out of the pool: `(original length, bytes kept)` each,
/// their bytes one after another in `data`.
#[derive(Debug, Default)]
struct Batch {
    ts_ns: u64,
    frames: Vec<(u32, u32)>,
    data: Vec<u8>,
}

/// What the two halves share.
#[derive(Debug, Default)]
struct Shared {
    /// Frames written to the file.
    written: AtomicU64,
    /// Bytes of frame data queued and not yet written.
    queued_bytes: AtomicUsize,
    /// The writer hit an error (kept in `error`) and stopped.
    failed: AtomicBool,
    error: Mutex<Option<String>>,
    /// The writer has ended (file flushed, or failed).
    done: AtomicBool,
}

impl Shared {
    fn fail(&self, e: impl ToString) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = Some(e.to_string());
        self.failed.store(true, Ordering::Release);
    }

    fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The worker's half of a capture on one port (see the module doc).
#[derive(Debug)]
pub struct PortCapture {
    /// `None` once closed (limit reached, finished): the writer then ends.
    tx: Option<SyncSender<Batch>>,
    /// Batches the writer is done with, for reuse.
    recycled: Receiver<Batch>,
    spare: Option<Batch>,
    shared: Arc<Shared>,
    path: PathBuf,
    limit: Option<u64>,
    snaplen: u32,
    captured: u64,
    dropped: u64,
    /// The writer thread, when [`PortCapture::start`] spawned it.
    writer: Option<JoinHandle<()>>,
}

/// The writing half of a capture (see the module doc); [`CaptureWriter::run`] it on a thread of
/// your own, or let [`PortCapture::start`] spawn one.
#[derive(Debug)]
pub struct CaptureWriter<W: Write> {
    rx: Receiver<Batch>,
    recycle: SyncSender<Batch>,
    pcap: PcapWriter<W>,
    shared: Arc<Shared>,
    path: PathBuf,
}

impl PortCapture {
    /// Both halves of a capture into `out` (the pcap header is written now, on the calling
    /// thread); `path` is what `show ports` names. Nothing runs the writer yet.
    pub fn new<W: Write>(
        out: W,
        path: &Path,
        limit: Option<u64>,
    ) -> Result<(PortCapture, CaptureWriter<W>), PcapError> {
        let pcap = PcapWriter::new(out, DEFAULT_SNAPLEN).map_err(|e| with_path(e, path))?;
        let (tx, rx) = mpsc::sync_channel(CAPTURE_QUEUE_BATCHES);
        let (recycle, recycled) = mpsc::sync_channel(CAPTURE_QUEUE_BATCHES);
        let shared = Arc::new(Shared::default());
        Ok((
            PortCapture {
                tx: Some(tx),
                recycled,
                spare: None,
                shared: Arc::clone(&shared),
                path: path.to_path_buf(),
                limit,
                snaplen: DEFAULT_SNAPLEN,
                captured: 0,
                dropped: 0,
                writer: None,
            },
            CaptureWriter {
                rx,
                recycle,
                pcap,
                shared,
                path: path.to_path_buf(),
            },
        ))
    }

    /// A capture into `out` whose writer runs on a thread spawned here (the caller's side: the
    /// control plane's thread for `ctl capture`, never the worker).
    pub fn start<W: Write + Send + 'static>(
        out: W,
        path: &Path,
        limit: Option<u64>,
    ) -> Result<PortCapture, CaptureError> {
        let (mut cap, writer) = PortCapture::new(out, path, limit)?;
        cap.writer = Some(writer.spawn().map_err(CaptureError::Spawn)?);
        Ok(cap)
    }

    /// Opens (truncating) the regular file at `path` — not following a symlink, not blocking on
    /// a FIFO, on the calling thread — and [`PortCapture::start`]s a capture into it.
    pub fn create(path: &Path, limit: Option<u64>) -> Result<PortCapture, CaptureError> {
        let file = open_regular(path)?;
        PortCapture::start(BufWriter::with_capacity(1 << 16, file), path, limit)
    }

    /// Whether frames are still being captured.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.tx.is_some()
            && !self.shared.failed.load(Ordering::Acquire)
            && !matches!(self.limit, Some(l) if self.captured >= l)
    }

    /// Offers `pkts` (up to the limit) to the writer as one batch; never blocks. Frames the
    /// writer cannot take now are counted in [`CaptureInfo::dropped`].
    pub fn record(&mut self, pool: &Pool, pkts: &[u32]) {
        if pkts.is_empty() || !self.is_active() {
            return;
        }
        let n = match self.limit {
            Some(l) => pkts.len().min((l - self.captured) as usize),
            None => pkts.len(),
        };
        let pkts = &pkts[..n];
        let snaplen = self.snaplen as usize;
        let keep = |h: u32| (pool.header(h).total_len as usize).min(snaplen);
        let bytes: usize = pkts.iter().map(|&h| keep(h)).sum();
        if self.shared.queued_bytes.load(Ordering::Acquire) + bytes > CAPTURE_QUEUE_BYTES {
            self.dropped += n as u64;
            return;
        }
        let mut b = self
            .spare
            .take()
            .or_else(|| self.recycled.try_recv().ok())
            .unwrap_or_default();
        b.frames.clear();
        b.data.clear();
        b.ts_ns = now_ns();
        for &h in pkts {
            let (len, kept) = (pool.header(h).total_len, keep(h));
            let start = b.data.len();
            for seg in pool.segments(h) {
                let left = kept - (b.data.len() - start);
                if left == 0 {
                    break;
                }
                b.data.extend_from_slice(&seg[..seg.len().min(left)]);
            }
            b.frames.push((len, (b.data.len() - start) as u32));
        }
        let queued = b.data.len();
        self.shared.queued_bytes.fetch_add(queued, Ordering::AcqRel);
        let tx = self.tx.as_ref().expect("active");
        match tx.try_send(b) {
            Ok(()) => self.captured += n as u64,
            Err(TrySendError::Full(b)) | Err(TrySendError::Disconnected(b)) => {
                self.shared.queued_bytes.fetch_sub(queued, Ordering::AcqRel);
                self.spare = Some(b);
                self.dropped += n as u64;
            }
        }
        if !self.is_active() {
            // Reached the limit: let the writer complete the file now rather than when the
            // capture is stopped.
            self.tx = None;
        }
    }

    /// Closes the worker's side and waits up to `within` for the writer to write what it was
    /// given and flush the file. The writer's error, if it had one, is returned.
    pub fn finish(&mut self, within: Duration) -> Result<(), CaptureError> {
        self.tx = None;
        let deadline = Instant::now() + within;
        while !self.shared.done.load(Ordering::Acquire) {
            if Instant::now() >= deadline {
                return Err(CaptureError::Slow {
                    within,
                    written: self.shared.written.load(Ordering::Acquire),
                    captured: self.captured,
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        if let Some(h) = self.writer.take() {
            let _ = h.join();
        }
        match self.shared.error() {
            Some(e) => Err(CaptureError::Writer(e)),
            None => Ok(()),
        }
    }

    /// Frames not captured because the writer's queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn info(&self) -> CaptureInfo {
        CaptureInfo {
            path: self.path.display().to_string(),
            captured: self.captured,
            written: self.shared.written.load(Ordering::Acquire),
            dropped: self.dropped,
            limit: self.limit,
            active: self.is_active(),
            error: self.shared.error(),
        }
    }
}

impl<W: Write> CaptureWriter<W> {
    /// Writes batches until the worker's side closes (or a write fails), then flushes.
    pub fn run(mut self) {
        let mut unflushed = false;
        loop {
            match self.rx.recv_timeout(WRITER_IDLE_FLUSH) {
                Ok(b) => {
                    let r = self.write(&b);
                    self.shared
                        .queued_bytes
                        .fetch_sub(b.data.len(), Ordering::AcqRel);
                    let _ = self.recycle.try_send(b);
                    if let Err(e) = r {
                        self.shared.fail(with_path(e, &self.path));
                        break;
                    }
                    unflushed = true;
                }
                Err(RecvTimeoutError::Timeout) => {
                    if unflushed {
                        if let Err(e) = self.pcap.flush() {
                            self.shared.fail(with_path(e, &self.path));
                            break;
                        }
                        unflushed = false;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    if let Err(e) = self.pcap.flush() {
                        self.shared.fail(with_path(e, &self.path));
                    }
                    break;
                }
            }
        }
        self.shared.done.store(true, Ordering::Release);
    }

    fn write(&mut self, b: &Batch) -> Result<(), PcapError> {
        let mut at = 0;
        for &(len, kept) in &b.frames {
            let data = &b.data[at..at + kept as usize];
            at += kept as usize;
            self.pcap
                .write_segments(b.ts_ns, len as usize, std::iter::once(data))?;
            self.shared.written.fetch_add(1, Ordering::AcqRel);
        }
        Ok(())
    }
}

impl<W: Write + Send + 'static> CaptureWriter<W> {
    /// Runs the writer on a thread of its own (`vecswitch-pcap`).
    pub fn spawn(self) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("vecswitch-pcap".into())
            .spawn(move || self.run())
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
        c.finish(Duration::from_secs(10)).unwrap();
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 24);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A `Write` that fails every write after the header: the writer's error reaches `info` and
    /// `finish`, and the worker's side stops capturing.
    struct FailAfter(usize);
    impl Write for FailAfter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.0 < buf.len() {
                return Err(std::io::Error::other("disk on fire"));
            }
            self.0 -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn packets(pool: &mut Pool, n: usize, len: usize) -> Vec<u32> {
        (0..n)
            .map(|i| {
                let h = pool.alloc().unwrap();
                assert!(pool.write_packet(h, &vec![i as u8; len]));
                h
            })
            .collect()
    }

    #[test]
    fn a_writer_error_stops_the_capture_and_is_reported() {
        let mut pool = Pool::new(64);
        let pkts = packets(&mut pool, 4, 60);
        let mut cap = PortCapture::start(FailAfter(24), Path::new("x.pcap"), None).unwrap();
        cap.record(&pool, &pkts);
        let e = cap.finish(Duration::from_secs(10)).unwrap_err();
        assert!(e.to_string().contains("disk on fire"), "{e}");
        let info = cap.info();
        assert!(!info.active);
        assert_eq!((info.captured, info.written), (4, 0));
        assert!(info.error.unwrap().contains("disk on fire"));
        cap.record(&pool, &pkts);
        assert_eq!(cap.info().captured, 4, "nothing more taken after the error");
        pool.free_bulk(&pkts);
    }

    #[test]
    fn a_writer_that_does_not_run_costs_counted_records_never_a_wait() {
        let mut pool = Pool::new(64);
        let pkts = packets(&mut pool, 3, 100);
        let mut out = Vec::new();
        let (mut cap, writer) = PortCapture::new(&mut out, Path::new("q.pcap"), None).unwrap();
        let bursts = CAPTURE_QUEUE_BATCHES + 10;
        for _ in 0..bursts {
            cap.record(&pool, &pkts);
        }
        let info = cap.info();
        assert_eq!(info.captured, 3 * CAPTURE_QUEUE_BATCHES as u64);
        assert_eq!(info.dropped, 30);
        assert_eq!(info.written, 0);
        cap.tx = None; // what `finish` does first
        writer.run();
        assert!(cap.finish(Duration::from_secs(1)).is_ok());
        assert_eq!(cap.info().written, cap.info().captured);
        assert_eq!(
            out.len(),
            24 + 3 * CAPTURE_QUEUE_BATCHES * (16 + 100),
            "pcap header + one record per captured frame"
        );
        pool.free_bulk(&pkts);
    }

    #[test]
    fn the_byte_budget_bounds_what_a_stalled_writer_costs() {
        let mut pool = Pool::new(64);
        let pkts = packets(&mut pool, 1, 1500);
        let (mut cap, _writer) = PortCapture::new(Vec::new(), Path::new("b.pcap"), None).unwrap();
        cap.shared
            .queued_bytes
            .store(CAPTURE_QUEUE_BYTES - 1000, Ordering::Release);
        cap.record(&pool, &pkts);
        assert_eq!((cap.info().captured, cap.info().dropped), (0, 1));
        pool.free_bulk(&pkts);
    }

    #[test]
    fn the_limit_closes_the_queue_and_the_file_completes_by_itself() {
        let mut pool = Pool::new(64);
        let pkts = packets(&mut pool, 5, 60);
        let (mut cap, writer) = PortCapture::new(Vec::new(), Path::new("l.pcap"), Some(3)).unwrap();
        cap.record(&pool, &pkts);
        assert!(!cap.is_active());
        assert_eq!(cap.info().captured, 3);
        // The worker side closed the channel: the writer writes the 3 frames and ends on its own.
        writer.run();
        assert!(cap.shared.done.load(Ordering::Acquire));
        assert_eq!(cap.info().written, 3);
        pool.free_bulk(&pkts);
    }
}
