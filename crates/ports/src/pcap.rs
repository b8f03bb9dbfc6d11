//! Packet capture in the classic libpcap file format.
//!
//! - [`PcapWriter`] writes a pcap stream: the 24-byte global header with the nanosecond magic
//!   `0xa1b23c4d`, version 2.4, link type [`LINKTYPE_ETHERNET`], then one 16-byte record header per
//!   frame (seconds, nanoseconds, captured length, original length) followed by the bytes.
//!   Multi-byte fields are written little-endian; readers tell the byte order from the magic.
//! - [`PcapReader`] reads such files back (nanosecond or microsecond magic, either byte order),
//!   returning [`PcapRecord`]s; malformed files give a [`PcapError`] naming what is wrong, never a
//!   panic. The generator uses it to replay captures, the tests to check what was written.
//! - [`Capture`] wraps any [`Port`] and writes every frame it receives (after `rx_burst`) and every
//!   frame handed to `tx_burst` (what the switch sent to the port, including frames the port then
//!   counted as `tx_dropped`), optionally only the first `max_frames`; after that, or after a write
//!   error, capturing stops and forwarding goes on. The file is flushed on drop.
//!
//! Format reference: the libpcap file format (draft-ietf-opsawg-pcap, "PCAP Capture File Format").

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;
use vecswitch_buffer::Pool;

use crate::{LinkState, Port, PortStats};

/// Magic of a file with nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Magic of a file with microsecond timestamps.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Link type of Ethernet frames (LINKTYPE_ETHERNET, tcpdump.org link-layer header types).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Snapshot length written by default: whole frames up to 256 KiB.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// Errors of the pcap reader and writer.
#[derive(Debug, Error)]
pub enum PcapError {
    #[error("pcap {path:?}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("pcap: magic {value:#010x} is not a pcap file; accepted: 0xa1b2c3d4 (µs) or 0xa1b23c4d (ns), either byte order")]
    BadMagic { value: u32 },
    #[error("pcap: version {major}.{minor} is not supported; accepted: 2.x")]
    BadVersion { major: u16, minor: u16 },
    #[error("pcap: snaplen {value} is not accepted; expected 1 to {max}", max = u32::MAX)]
    BadSnaplen { value: u32 },
    #[error(
        "pcap: record {index} has captured length {len}, more than the accepted maximum {max}"
    )]
    RecordTooLong { index: u64, len: u32, max: u32 },
    #[error("pcap: record {index} has captured length {incl} > original length {orig}")]
    RecordLengths { index: u64, incl: u32, orig: u32 },
    #[error("pcap: file ends inside record {index}")]
    Truncated { index: u64 },
}

fn io_err(path: &str) -> impl FnOnce(io::Error) -> PcapError + '_ {
    move |source| PcapError::Io {
        path: path.to_string(),
        source,
    }
}

/// Nanoseconds since the Unix epoch, now.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Writes a pcap stream (see the module doc).
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
    written: u64,
}

impl PcapWriter<BufWriter<File>> {
    /// Creates (truncating) the file at `path` and writes the global header.
    pub fn create(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let p = path.as_ref().display().to_string();
        let file = File::create(path.as_ref()).map_err(io_err(&p))?;
        PcapWriter::new(BufWriter::with_capacity(1 << 16, file), DEFAULT_SNAPLEN).map_err(|e| {
            match e {
                PcapError::Io { source, .. } => PcapError::Io { path: p, source },
                e => e,
            }
        })
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header to `out`; frames longer than `snaplen` are cut to it.
    pub fn new(mut out: W, snaplen: u32) -> Result<Self, PcapError> {
        if snaplen == 0 {
            return Err(PcapError::BadSnaplen { value: snaplen });
        }
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h).map_err(io_err(""))?;
        Ok(PcapWriter {
            out,
            snaplen,
            written: 0,
        })
    }

    /// Writes one frame stamped `ts_ns` (nanoseconds since the Unix epoch).
    pub fn write_frame(&mut self, ts_ns: u64, frame: &[u8]) -> Result<(), PcapError> {
        self.write_segments(ts_ns, frame.len(), std::iter::once(frame))
    }

    /// Writes one frame given as segments (a chained packet) whose lengths add up to `len`.
    pub fn write_segments<'a>(
        &mut self,
        ts_ns: u64,
        len: usize,
        segments: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), PcapError> {
        let orig = u32::try_from(len).unwrap_or(u32::MAX);
        let incl = orig.min(self.snaplen);
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&((ts_ns / 1_000_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((ts_ns % 1_000_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&incl.to_le_bytes());
        r[12..16].copy_from_slice(&orig.to_le_bytes());
        self.out.write_all(&r).map_err(io_err(""))?;
        let mut left = incl as usize;
        for seg in segments {
            if left == 0 {
                break;
            }
            let n = seg.len().min(left);
            self.out.write_all(&seg[..n]).map_err(io_err(""))?;
            left -= n;
        }
        // Segments shorter than announced: pad so that the file stays parseable.
        if left > 0 {
            self.out.write_all(&vec![0u8; left]).map_err(io_err(""))?;
        }
        self.written += 1;
        Ok(())
    }

    /// Writes pool packet `h` (all its segments).
    pub fn write_packet(&mut self, ts_ns: u64, pool: &Pool, h: u32) -> Result<(), PcapError> {
        let len = pool.header(h).total_len as usize;
        self.write_segments(ts_ns, len, pool.segments(h))
    }

    /// Frames written so far.
    pub fn frames_written(&self) -> u64 {
        self.written
    }

    /// Flushes buffered output.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.out.flush().map_err(io_err(""))
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> Result<W, PcapError> {
        self.flush()?;
        Ok(self.out)
    }
}

/// One frame read from a pcap file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapRecord {
    /// Timestamp in nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Length of the frame on the wire.
    pub orig_len: u32,
    /// The captured bytes (`orig_len` or fewer).
    pub data: Vec<u8>,
}

/// Reads a pcap stream (see the module doc).
#[derive(Debug)]
pub struct PcapReader<R: Read> {
    input: R,
    swapped: bool,
    nanos: bool,
    snaplen: u32,
    linktype: u32,
    index: u64,
}

/// Largest record the reader accepts whatever the header's snaplen says (bounds allocations).
const MAX_RECORD: u32 = 1 << 20;

impl PcapReader<BufReader<File>> {
    /// Opens the file at `path` and reads its global header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, PcapError> {
        let p = path.as_ref().display().to_string();
        let f = File::open(path.as_ref()).map_err(io_err(&p))?;
        PcapReader::new(BufReader::new(f)).map_err(|e| match e {
            PcapError::Io { source, .. } => PcapError::Io { path: p, source },
            e => e,
        })
    }
}

impl<R: Read> PcapReader<R> {
    /// Reads the global header from `input`.
    pub fn new(mut input: R) -> Result<Self, PcapError> {
        let mut h = [0u8; 24];
        input.read_exact(&mut h).map_err(io_err(""))?;
        let raw = u32::from_le_bytes(h[0..4].try_into().expect("4 bytes"));
        let (swapped, nanos) = match raw {
            MAGIC_NANOS => (false, true),
            MAGIC_MICROS => (false, false),
            m if m.swap_bytes() == MAGIC_NANOS => (true, true),
            m if m.swap_bytes() == MAGIC_MICROS => (true, false),
            value => return Err(PcapError::BadMagic { value }),
        };
        let mut r = PcapReader {
            input,
            swapped,
            nanos,
            snaplen: 0,
            linktype: 0,
            index: 0,
        };
        let major = r.u16_at(&h, 4);
        let minor = r.u16_at(&h, 6);
        if major != 2 {
            return Err(PcapError::BadVersion { major, minor });
        }
        r.snaplen = r.u32_at(&h, 16);
        r.linktype = r.u32_at(&h, 20);
        Ok(r)
    }

    fn u16_at(&self, b: &[u8], at: usize) -> u16 {
        let v = u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"));
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    fn u32_at(&self, b: &[u8], at: usize) -> u32 {
        let v = u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if self.swapped {
            v.swap_bytes()
        } else {
            v
        }
    }

    /// The file's link type (1 = Ethernet).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// The file's snapshot length.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Whether timestamps are in nanoseconds (else microseconds; [`PcapRecord::ts_ns`] is converted).
    pub fn is_nanosecond(&self) -> bool {
        self.nanos
    }

    /// The next record, or `None` at a clean end of file.
    pub fn next_record(&mut self) -> Result<Option<PcapRecord>, PcapError> {
        let mut r = [0u8; 16];
        let mut got = 0;
        while got < r.len() {
            match self.input.read(&mut r[got..]) {
                Ok(0) if got == 0 => return Ok(None),
                Ok(0) => return Err(PcapError::Truncated { index: self.index }),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(PcapError::Io {
                        path: String::new(),
                        source: e,
                    })
                }
            }
        }
        let sec = u64::from(self.u32_at(&r, 0));
        let frac = u64::from(self.u32_at(&r, 4));
        let incl = self.u32_at(&r, 8);
        let orig = self.u32_at(&r, 12);
        if incl > MAX_RECORD {
            return Err(PcapError::RecordTooLong {
                index: self.index,
                len: incl,
                max: MAX_RECORD,
            });
        }
        if incl > orig {
            return Err(PcapError::RecordLengths {
                index: self.index,
                incl,
                orig,
            });
        }
        let mut data = vec![0u8; incl as usize];
        self.input
            .read_exact(&mut data)
            .map_err(|_| PcapError::Truncated { index: self.index })?;
        self.index += 1;
        let ts_ns = sec * 1_000_000_000 + if self.nanos { frac } else { frac * 1000 };
        Ok(Some(PcapRecord {
            ts_ns,
            orig_len: orig,
            data,
        }))
    }

    /// Reads every remaining record.
    pub fn read_all(&mut self) -> Result<Vec<PcapRecord>, PcapError> {
        let mut v = Vec::new();
        while let Some(r) = self.next_record()? {
            v.push(r);
        }
        Ok(v)
    }
}

/// A port wrapper that writes what passes through it to a pcap file (see the module doc).
#[derive(Debug)]
pub struct Capture<P: Port> {
    inner: P,
    path: PathBuf,
    writer: Option<PcapWriter<BufWriter<File>>>,
    max_frames: Option<u64>,
    error: Option<String>,
    stopped: bool,
}

impl<P: Port> Capture<P> {
    /// Wraps `inner`, writing to a new file at `path`.
    pub fn create(inner: P, path: impl AsRef<Path>) -> Result<Capture<P>, PcapError> {
        let writer = PcapWriter::create(path.as_ref())?;
        Ok(Capture {
            inner,
            path: path.as_ref().to_path_buf(),
            writer: Some(writer),
            max_frames: None,
            error: None,
            stopped: false,
        })
    }

    /// Captures at most `n` frames (received and sent together); forwarding continues afterwards.
    pub fn with_max_frames(mut self, n: u64) -> Capture<P> {
        self.max_frames = Some(n);
        self
    }

    /// The wrapped port.
    pub fn inner(&self) -> &P {
        &self.inner
    }

    /// The wrapped port, mutable.
    pub fn inner_mut(&mut self) -> &mut P {
        &mut self.inner
    }

    /// The capture file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Frames written so far.
    pub fn captured(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| w.frames_written())
    }

    /// Whether frames are still being written (not stopped by the limit, an error or `finish`).
    pub fn is_capturing(&self) -> bool {
        let under_limit = match self.max_frames {
            Some(m) => self.captured() < m,
            None => true,
        };
        self.error.is_none() && !self.stopped && self.writer.is_some() && under_limit
    }

    /// The write error that stopped the capture, if any.
    pub fn capture_error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Flushes the file and stops capturing; the port keeps forwarding.
    pub fn finish(&mut self) -> Result<(), PcapError> {
        self.stopped = true;
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    fn record(&mut self, pool: &Pool, pkts: &[u32]) {
        if !self.is_capturing() || pkts.is_empty() {
            return;
        }
        let ts = now_ns();
        let Some(w) = self.writer.as_mut() else {
            return;
        };
        for &h in pkts {
            if self.max_frames.is_some_and(|m| w.frames_written() >= m) {
                break;
            }
            if let Err(e) = w.write_packet(ts, pool, h) {
                self.error = Some(format!("{}: {e}", self.path.display()));
                return;
            }
        }
        if self.max_frames.is_some_and(|m| w.frames_written() >= m) {
            if let Err(e) = w.flush() {
                self.error = Some(format!("{}: {e}", self.path.display()));
            }
        }
    }
}

impl<P: Port> Drop for Capture<P> {
    fn drop(&mut self) {
        if let Some(w) = self.writer.as_mut() {
            let _ = w.flush();
        }
    }
}

impl<P: Port> Port for Capture<P> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let start = out.len();
        let n = self.inner.rx_burst(pool, out, max);
        self.record(pool, &out[start..start + n]);
        n
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        self.record(pool, pkts);
        self.inner.tx_burst(pool, pkts)
    }

    fn poll_control(&mut self) {
        self.inner.poll_control()
    }

    fn stats(&self) -> PortStats {
        self.inner.stats()
    }

    fn clear_stats(&mut self) {
        self.inner.clear_stats()
    }

    fn link(&self) -> LinkState {
        self.inner.link()
    }

    /// The inner port's: the capture itself loses no frame (a write error stops the capture,
    /// not the traffic).
    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.error_counters()
    }

    fn rx_ring(&self) -> Option<crate::RingFill> {
        self.inner.rx_ring()
    }

    fn rx_wait(&self) -> crate::RxWait<'_> {
        self.inner.rx_wait()
    }

    fn describe(&self) -> String {
        format!(
            "{} (pcap {} frames to {})",
            self.inner.describe(),
            self.captured(),
            self.path.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_bytes_are_libpcap_nanosecond_ethernet() {
        let mut w = PcapWriter::new(Vec::new(), 65535).unwrap();
        w.write_frame(1_700_000_000_123_456_789, &[0xaa; 60])
            .unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&b[4..8], &[2, 0, 4, 0]);
        assert_eq!(&b[16..20], &65535u32.to_le_bytes());
        assert_eq!(&b[20..24], &[1, 0, 0, 0]);
        assert_eq!(&b[24..28], &1_700_000_000u32.to_le_bytes());
        assert_eq!(&b[28..32], &123_456_789u32.to_le_bytes());
        assert_eq!(&b[32..36], &60u32.to_le_bytes());
        assert_eq!(&b[36..40], &60u32.to_le_bytes());
        assert_eq!(b.len(), 24 + 16 + 60);
    }

    #[test]
    fn roundtrip_with_snaplen_cut_and_chained_packets() {
        let mut pool = Pool::new(16);
        let big: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let h = crate::loopback::packet_from_bytes(&mut pool, &big).unwrap();
        let mut w = PcapWriter::new(Vec::new(), 4096).unwrap();
        w.write_packet(5, &pool, h).unwrap();
        w.write_frame(6_000_000_001, &big[..100]).unwrap();
        let bytes = w.into_inner().unwrap();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert!(r.is_nanosecond());
        assert_eq!((r.linktype(), r.snaplen()), (1, 4096));
        let recs = r.read_all().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            recs[0],
            PcapRecord {
                ts_ns: 5,
                orig_len: 5000,
                data: big[..4096].to_vec()
            }
        );
        assert_eq!(
            recs[1],
            PcapRecord {
                ts_ns: 6_000_000_001,
                orig_len: 100,
                data: big[..100].to_vec()
            }
        );
        pool.free(h);
    }

    #[test]
    fn reader_accepts_big_endian_microsecond_files() {
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC_MICROS.to_be_bytes());
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&4u16.to_be_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&1500u32.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&3u32.to_be_bytes());
        b.extend_from_slice(&7u32.to_be_bytes());
        b.extend_from_slice(&2u32.to_be_bytes());
        b.extend_from_slice(&64u32.to_be_bytes());
        b.extend_from_slice(&[9, 8]);
        let mut r = PcapReader::new(&b[..]).unwrap();
        assert!(!r.is_nanosecond());
        let rec = r.next_record().unwrap().unwrap();
        assert_eq!(
            rec,
            PcapRecord {
                ts_ns: 3_000_007_000,
                orig_len: 64,
                data: vec![9, 8]
            }
        );
        assert!(r.next_record().unwrap().is_none());
    }

    #[test]
    fn malformed_files_are_errors_not_panics() {
        assert!(matches!(
            PcapReader::new(&[0u8; 24][..]),
            Err(PcapError::BadMagic { value: 0 })
        ));
        assert!(matches!(
            PcapReader::new(&[0x4d, 0x3c][..]),
            Err(PcapError::Io { .. })
        ));
        let mut w = PcapWriter::new(Vec::new(), 100).unwrap();
        w.write_frame(0, &[1; 50]).unwrap();
        let good = w.into_inner().unwrap();
        // Cut inside the record data.
        let mut r = PcapReader::new(&good[..good.len() - 1]).unwrap();
        assert!(matches!(
            r.next_record(),
            Err(PcapError::Truncated { index: 0 })
        ));
        // Cut inside the record header.
        let mut r = PcapReader::new(&good[..30]).unwrap();
        assert!(matches!(
            r.next_record(),
            Err(PcapError::Truncated { index: 0 })
        ));
        // Captured length beyond the limit, and beyond the original length.
        let mut bad = good.clone();
        bad[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = PcapReader::new(&bad[..])
            .unwrap()
            .next_record()
            .unwrap_err();
        assert!(e.to_string().contains("4294967295"), "{e}");
        let mut bad = good.clone();
        bad[36..40].copy_from_slice(&10u32.to_le_bytes());
        assert!(matches!(
            PcapReader::new(&bad[..]).unwrap().next_record(),
            Err(PcapError::RecordLengths {
                incl: 50,
                orig: 10,
                ..
            })
        ));
        let mut bad = good;
        bad[4] = 3;
        assert!(matches!(
            PcapReader::new(&bad[..]),
            Err(PcapError::BadVersion { major: 3, minor: 4 })
        ));
        assert!(matches!(
            PcapWriter::new(Vec::new(), 0),
            Err(PcapError::BadSnaplen { value: 0 })
        ));
    }

    #[test]
    fn random_bytes_never_panic_the_reader() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut w = PcapWriter::new(Vec::new(), 2000).unwrap();
        for i in 0..20 {
            w.write_frame(i, &vec![i as u8; 10 + i as usize * 7])
                .unwrap();
        }
        let good = w.into_inner().unwrap();
        for _ in 0..2000 {
            let mut b = good.clone();
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..b.len());
                b[i] = rng.gen();
            }
            b.truncate(rng.gen_range(0..=b.len()));
            if let Ok(mut r) = PcapReader::new(&b[..]) {
                let _ = r.read_all();
            }
        }
    }
}
