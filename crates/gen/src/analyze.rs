//! Receive analysis of one stream: [`StreamAnalyzer`] takes `(sequence, tx time, rx time)` of every
//! received frame that carries the stream's signature and keeps the counts and the latency statistics
//! that end up in a [`StreamRx`] report.
//!
//! - **duplicates**: a sequence number seen before (a sliding bitmap of the last [`DUP_WINDOW`]
//!   sequence numbers below the highest one; older arrivals cannot be checked and are counted as
//!   `late_beyond_window`, received and unique);
//! - **reordered** (RFC 4737 §3.3): a unique frame whose sequence number is lower than the next
//!   expected one (the highest seen + 1);
//! - **latency**: forwarding delay `rx − tx` of unique frames, exact min/avg/max and percentiles from
//!   an HDR histogram (3 significant digits);
//! - **jitter** (RFC 4689 §3.2.5): `|D(i) − D(i−1)|` over consecutive received frames of the stream,
//!   mean and max;
//! - **lost**: `tx − unique rx`, computed once the trial's drain period is over.
//!
//! The delay histogram itself travels with the report as a [`LatencyHistogram`] (the HdrHistogram
//! V2 encoding with DEFLATE, as hex): percentiles over several trials or streams are read from the merged
//! histograms ([`LatencyHistogram::merge`]), never averaged from per-trial percentiles.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The HdrHistogram of delays in ns that [`LatencyHistogram`] encodes.
pub type DelayHistogram = Histogram<u64>;

/// Lowest and highest trackable delay (ns) and significant digits of every latency histogram.
const HIST_LOW: u64 = 1;
const HIST_HIGH: u64 = 3_600_000_000_000;
const HIST_DIGITS: u8 = 3;

fn new_histogram() -> Histogram<u64> {
    // 1 ns .. ~1 hour, 3 significant digits; values above are clamped.
    Histogram::new_with_bounds(HIST_LOW, HIST_HIGH, HIST_DIGITS).expect("static histogram bounds")
}

/// A delay histogram in a compact, exact, mergeable form: the HdrHistogram V2 encoding with DEFLATE
/// (the format HdrHistogram's tools read), as hex. A few hundred bytes for a trial's delays.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LatencyHistogram(String);

// The hex is for files; in `{:?}` output (test failures, logs) its size says enough.
impl std::fmt::Debug for LatencyHistogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LatencyHistogram({} hex digits)", self.0.len())
    }
}

impl LatencyHistogram {
    /// Encodes `h`.
    pub fn encode(h: &Histogram<u64>) -> LatencyHistogram {
        let mut bytes = Vec::new();
        // Serialising into a Vec cannot fail for a histogram this module built.
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        let mut s = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            s.push_str(&format!("{b:02x}"));
        }
        LatencyHistogram(s)
    }

    /// Decodes the histogram; `None` if the text is not a histogram this module encoded.
    pub fn decode(&self) -> Option<Histogram<u64>> {
        let t = self.0.as_bytes();
        if !t.len().is_multiple_of(2) {
            return None;
        }
        let bytes: Option<Vec<u8>> = t
            .chunks(2)
            .map(|c| u8::from_str_radix(std::str::from_utf8(c).ok()?, 16).ok())
            .collect();
        let bytes = bytes?;
        Deserializer::new().deserialize(&mut &bytes[..]).ok()
    }

    /// The sum of several histograms (every sample of every input); `None` if `all` is empty or
    /// one does not decode.
    pub fn merge<'a>(
        all: impl IntoIterator<Item = &'a LatencyHistogram>,
    ) -> Option<Histogram<u64>> {
        let mut out: Option<Histogram<u64>> = None;
        for h in all {
            let h = h.decode()?;
            match out.as_mut() {
                None => {
                    let mut m = new_histogram();
                    m.add(&h).ok()?;
                    out = Some(m);
                }
                Some(m) => m.add(&h).ok()?,
            }
        }
        out
    }
}

/// Sequence numbers below the highest seen for which duplicates are detected.
pub const DUP_WINDOW: u64 = 1 << 20;
const WORDS: usize = (DUP_WINDOW / 64) as usize;

/// Latency statistics in nanoseconds (all zero when nothing was received).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    pub samples: u64,
    pub min_ns: u64,
    pub avg_ns: f64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p99_9_ns: u64,
    pub p99_99_ns: u64,
    /// RFC 4689 jitter: mean of |D(i) − D(i−1)| over consecutive received frames.
    pub jitter_avg_ns: f64,
    /// RFC 4689 jitter: largest |D(i) − D(i−1)|.
    pub jitter_max_ns: u64,
}

/// Counts of one stream as the receiver saw them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StreamRx {
    /// Frames received with this stream's signature, duplicates included.
    pub rx: u64,
    /// Distinct sequence numbers received.
    pub rx_unique: u64,
    pub duplicated: u64,
    /// RFC 4737 reordered frames (unique, arrived with seq < next expected).
    pub reordered: u64,
    /// Frames older than the duplicate window (counted unique; duplicates among them undetectable).
    pub late_beyond_window: u64,
    /// Frames whose sequence number was never sent (not counted in `rx`).
    pub bad_seq: u64,
    pub rx_bytes: u64,
    pub latency: Latency,
    /// The delays of `latency` as a histogram (`None` when nothing was received).
    pub latency_histogram: Option<LatencyHistogram>,
}

/// Per-stream receive state.
#[derive(Debug)]
pub struct StreamAnalyzer {
    /// Highest sequence number seen + 1 (RFC 4737 "next expected").
    next_expected: u64,
    /// Bit `s % DUP_WINDOW` set when sequence `s` (within the window) was seen.
    seen: Box<[u64]>,
    /// Lowest sequence number whose bit in `seen` is meaningful.
    window_base: u64,
    hist: Histogram<u64>,
    lat_sum: u128,
    lat_min: u64,
    lat_max: u64,
    prev_delay: Option<u64>,
    jitter_sum: u128,
    jitter_n: u64,
    jitter_max: u64,
    rx: StreamRx,
}

impl Default for StreamAnalyzer {
    fn default() -> Self {
        StreamAnalyzer::new()
    }
}

impl StreamAnalyzer {
    pub fn new() -> StreamAnalyzer {
        StreamAnalyzer {
            next_expected: 0,
            seen: vec![0u64; WORDS].into_boxed_slice(),
            window_base: 0,
            // 1 ns .. ~1 hour, 3 significant digits; values above are clamped.
            hist: new_histogram(),
            lat_sum: 0,
            lat_min: u64::MAX,
            lat_max: 0,
            prev_delay: None,
            jitter_sum: 0,
            jitter_n: 0,
            jitter_max: 0,
            rx: StreamRx::default(),
        }
    }

    /// The highest sequence number seen + 1 (0 before the first frame): the reference for extending
    /// truncated sequence numbers.
    pub fn next_expected(&self) -> u64 {
        self.next_expected
    }

    /// Unique frames received so far.
    pub fn rx_unique(&self) -> u64 {
        self.rx.rx_unique
    }

    /// Records one received frame: full sequence number, transmit and receive times (same clock),
    /// frame length in bytes. `sent` is how many frames of this stream had been sent when it was
    /// received: a sequence number at or above it was never sent (counted as `bad_seq`).
    pub fn record(&mut self, seq: u64, tx_ns: u64, rx_ns: u64, len: usize, sent: u64) {
        if seq >= sent {
            self.rx.bad_seq += 1;
            return;
        }
        self.rx.rx += 1;
        self.rx.rx_bytes += len as u64;
        // Duplicate check in the sliding window.
        if seq + DUP_WINDOW < self.next_expected || seq < self.window_base {
            self.rx.late_beyond_window += 1;
            self.rx.reordered += 1;
            self.rx.rx_unique += 1;
        } else {
            if seq >= self.next_expected {
                self.advance_window(seq + 1);
            }
            let bit = (seq % DUP_WINDOW) as usize;
            let (w, b) = (bit / 64, bit % 64);
            if self.seen[w] & (1 << b) != 0 {
                self.rx.duplicated += 1;
                return;
            }
            self.seen[w] |= 1 << b;
            self.rx.rx_unique += 1;
            if seq < self.next_expected {
                // RFC 4737 §3.3: reordered if s < NextExp.
                self.rx.reordered += 1;
            } else {
                self.next_expected = seq + 1;
            }
        }
        // Forwarding delay of this frame (a receive time before the transmit time, impossible on one
        // clock, is clamped to 0).
        let d = rx_ns.saturating_sub(tx_ns);
        self.lat_sum += d as u128;
        self.lat_min = self.lat_min.min(d);
        self.lat_max = self.lat_max.max(d);
        self.hist.saturating_record(d.max(1));
        // RFC 4689 §3.2.5 jitter over consecutive received frames.
        if let Some(p) = self.prev_delay {
            let j = d.abs_diff(p);
            self.jitter_sum += j as u128;
            self.jitter_n += 1;
            self.jitter_max = self.jitter_max.max(j);
        }
        self.prev_delay = Some(d);
    }

    /// Moves the window so that it covers `[new_next - DUP_WINDOW, new_next)`, clearing the bits of
    /// sequence numbers that enter it.
    fn advance_window(&mut self, new_next: u64) {
        let new_base = new_next.saturating_sub(DUP_WINDOW);
        let old_top = self.next_expected.max(self.window_base);
        if new_next - old_top >= DUP_WINDOW {
            self.seen.fill(0);
        } else {
            for s in old_top..new_next {
                let bit = (s % DUP_WINDOW) as usize;
                self.seen[bit / 64] &= !(1 << (bit % 64));
            }
        }
        self.window_base = self.window_base.max(new_base);
    }

    /// The counts so far.
    pub fn report(&self) -> StreamRx {
        let mut r = self.rx.clone();
        let n = r.rx_unique.max(1) as u128;
        if self.lat_max > 0 || self.lat_min != u64::MAX {
            let q = |p: f64| {
                self.hist
                    .value_at_quantile(p)
                    .min(self.lat_max)
                    .max(self.lat_min)
            };
            r.latency = Latency {
                samples: self.hist.len(),
                min_ns: self.lat_min,
                avg_ns: (self.lat_sum / n) as f64 + ((self.lat_sum % n) as f64 / n as f64),
                max_ns: self.lat_max,
                p50_ns: q(0.5),
                p90_ns: q(0.9),
                p99_ns: q(0.99),
                p99_9_ns: q(0.999),
                p99_99_ns: q(0.9999),
                jitter_avg_ns: if self.jitter_n == 0 {
                    0.0
                } else {
                    self.jitter_sum as f64 / self.jitter_n as f64
                },
                jitter_max_ns: self.jitter_max,
            };
            r.latency_histogram = Some(LatencyHistogram::encode(&self.hist));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(seqs: &[u64], sent: u64) -> StreamRx {
        let mut a = StreamAnalyzer::new();
        for &s in seqs {
            a.record(s, 0, 100, 64, sent);
        }
        a.report()
    }

    #[test]
    fn in_order_no_loss() {
        let r = feed(&(0..1000).collect::<Vec<_>>(), 1000);
        assert_eq!(
            (r.rx, r.rx_unique, r.duplicated, r.reordered),
            (1000, 1000, 0, 0)
        );
        assert_eq!(r.rx_bytes, 64_000);
    }

    #[test]
    fn loss_duplicates_and_reordering() {
        // 10 sent; 3 and 7 lost; 5 duplicated; 2 arrives after 4 (reordered).
        let r = feed(&[0, 1, 4, 2, 5, 5, 6, 8, 9], 10);
        assert_eq!(r.rx, 9);
        assert_eq!(r.rx_unique, 8);
        assert_eq!(r.duplicated, 1);
        assert_eq!(r.reordered, 1);
        assert_eq!(10 - r.rx_unique, 2);
    }

    #[test]
    fn rfc4737_example_counts_every_late_frame() {
        // RFC 4737 §3.3 style: 1 2 3 5 4 7 6 ... both 4 and 6 arrive below NextExp.
        let r = feed(&[1, 2, 3, 5, 4, 7, 6, 8], 10);
        assert_eq!(r.reordered, 2);
        assert_eq!(r.duplicated, 0);
        // A late duplicate of a reordered frame is a duplicate, not a second reordering.
        let r = feed(&[0, 2, 1, 1], 3);
        assert_eq!((r.reordered, r.duplicated, r.rx_unique), (1, 1, 3));
    }

    #[test]
    fn never_sent_sequence_is_not_ours() {
        let r = feed(&[0, 1, 50], 2);
        assert_eq!((r.rx, r.bad_seq), (2, 1));
    }

    #[test]
    fn duplicates_detected_across_window_moves() {
        let mut a = StreamAnalyzer::new();
        let n = DUP_WINDOW * 3 + 17;
        for s in 0..n {
            a.record(s, 0, 1, 64, n);
        }
        // Recent frame duplicated: detected.
        a.record(n - 5, 0, 1, 64, n);
        // Frame far older than the window: counted late, not a (detectable) duplicate.
        a.record(3, 0, 1, 64, n);
        let r = a.report();
        assert_eq!(r.duplicated, 1);
        assert_eq!(r.late_beyond_window, 1);
        assert_eq!(r.rx_unique, n + 1);
        // After a jump larger than the window, old bits are cleared: the jumped-over frames are new.
        let mut a = StreamAnalyzer::new();
        a.record(0, 0, 1, 64, u64::MAX);
        a.record(DUP_WINDOW * 5, 0, 1, 64, u64::MAX);
        a.record(DUP_WINDOW * 5 - 1, 0, 1, 64, u64::MAX);
        let r = a.report();
        assert_eq!((r.duplicated, r.reordered), (0, 1));
    }

    #[test]
    fn latency_and_jitter_on_known_delays() {
        let mut a = StreamAnalyzer::new();
        // Delays 10, 30, 20, 20, 70 µs.
        let delays = [10_000u64, 30_000, 20_000, 20_000, 70_000];
        for (i, &d) in delays.iter().enumerate() {
            let tx = 1_000_000 * i as u64;
            a.record(i as u64, tx, tx + d, 100, 5);
        }
        let l = a.report().latency;
        assert_eq!(l.samples, 5);
        assert_eq!(l.min_ns, 10_000);
        assert_eq!(l.max_ns, 70_000);
        assert_eq!(l.avg_ns, 30_000.0);
        // Jitter: |30-10|, |20-30|, |20-20|, |70-20| = 20, 10, 0, 50 µs → mean 20 µs, max 50 µs.
        assert_eq!(l.jitter_avg_ns, 20_000.0);
        assert_eq!(l.jitter_max_ns, 50_000);
        // Median of {10,20,20,30,70} is 20 µs (HDR: 3 significant digits).
        assert!(l.p50_ns.abs_diff(20_000) <= 20, "{}", l.p50_ns);
        assert!(l.p99_99_ns.abs_diff(70_000) <= 70, "{}", l.p99_99_ns);
    }

    #[test]
    fn histograms_round_trip_and_merge_exactly() {
        // Two "trials": 1,000 delays of 10 µs and 9,000 of 100 µs. Averaging their p50s would say
        // 55 µs; the merged histogram says 100 µs (90 % of all samples), and p5 says 10 µs.
        let mut a = StreamAnalyzer::new();
        for i in 0..1_000 {
            a.record(i, 0, 10_000, 64, 1_000);
        }
        let mut b = StreamAnalyzer::new();
        for i in 0..9_000 {
            b.record(i, 0, 100_000, 64, 9_000);
        }
        let (ra, rb) = (a.report(), b.report());
        let (ha, hb) = (
            ra.latency_histogram.clone().unwrap(),
            rb.latency_histogram.clone().unwrap(),
        );
        assert!(ha.0.len() < 2_000, "compact: {} hex chars", ha.0.len());
        assert_eq!(ha.decode().unwrap().len(), 1_000);
        let m = LatencyHistogram::merge([&ha, &hb]).unwrap();
        assert_eq!(m.len(), 10_000);
        assert!(m.value_at_quantile(0.5).abs_diff(100_000) <= 100);
        assert!(m.value_at_quantile(0.05).abs_diff(10_000) <= 10);
        let json = serde_json::to_string(&ra).unwrap();
        let back: LatencyHistogram =
            serde_json::from_str(&serde_json::to_string(&ha).unwrap()).unwrap();
        assert_eq!(back, ha);
        assert!(json.contains("latency_histogram"));
        assert!(LatencyHistogram("zz".into()).decode().is_none());
        assert!(LatencyHistogram::merge([]).is_none());
        // Nothing received: no histogram.
        assert!(StreamAnalyzer::new().report().latency_histogram.is_none());
    }

    #[test]
    fn percentiles_of_uniform_delays() {
        let mut a = StreamAnalyzer::new();
        for i in 0..100_000u64 {
            a.record(i, 0, 1_000 + i, 64, 100_000); // delays 1000..=100999 ns
        }
        let l = a.report().latency;
        let within = |v: u64, want: u64| v.abs_diff(want) * 1000 <= want; // 0.1 %
        assert!(within(l.p50_ns, 51_000), "{}", l.p50_ns);
        assert!(within(l.p90_ns, 91_000), "{}", l.p90_ns);
        assert!(within(l.p99_ns, 100_000), "{}", l.p99_ns);
        assert!(within(l.p99_9_ns, 100_900), "{}", l.p99_9_ns);
        assert_eq!(l.jitter_max_ns, 1);
        assert_eq!(l.jitter_avg_ns, 1.0);
    }
}
