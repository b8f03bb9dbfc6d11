//! The test signature every generated frame carries right after its UDP header: [`Signature`]
//! (stream id, sequence number, transmit timestamp), written in one of two layouts.
//!
//! | layout | bytes | fields (big-endian) |
//! |---|---|---|
//! | full | 18 | magic `76 53 47 31` ("vSG1", 4) · stream id (2) · sequence (4) · tx time ns (8) |
//! | compact | 10 | magic `c5 a7` (2) · stream id (1) · sequence (3) · tx time in 16 ns ticks, low 32 bits (4) |
//!
//! The full layout is used whenever the frame has room for it; the compact one fits frames whose UDP
//! payload has 10 to 17 bytes (64-byte IPv4 frames with one or two VLAN tags). The receiver extends
//! truncated fields from what it knows: the sequence number from the highest one seen on the stream
//! (valid while reordering stays within half the sequence space: 2^31 or 2^23 frames), the compact
//! timestamp from the receive time (valid while latency stays below 2^32 × 16 ns ≈ 68.7 s, longer
//! than any trial: the compact timestamp cannot wrap within a trial; its 16 ns tick truncates the
//! transmit time, so compact-signature latencies read up to 16 ns high). Stream ids
//! are limited to 0..=32767 (full) and 0..=127 (compact); the top bit marks warm-up frames.
//!
//! Minimum frame sizes (with FCS) that carry a signature: see [`min_frame_size`]; a 64-byte IPv6
//! frame cannot carry even its UDP header, so such sizes are raised (and reported) by the stream.
//!
//! This layout is the generator's own; it is not any other tester's signature.

use serde::Serialize;

/// Magic of the full layout ("vSG1").
pub const MAGIC_FULL: [u8; 4] = [0x76, 0x53, 0x47, 0x31];
/// Magic of the compact layout.
pub const MAGIC_COMPACT: [u8; 2] = [0xc5, 0xa7];
/// Bytes of the full layout.
pub const FULL_LEN: usize = 18;
/// Bytes of the compact layout.
pub const COMPACT_LEN: usize = 10;
/// Nanoseconds per tick of the compact layout's 32-bit timestamp (wraps after 2^32 ticks ≈ 68.7 s).
pub const COMPACT_TICK_NS: u64 = 16;
/// Largest stream id the full layout carries (the top bit of the field marks warm-up).
pub const MAX_STREAM_FULL: u16 = 0x7fff;
/// Largest stream id the compact layout carries.
pub const MAX_STREAM_COMPACT: u16 = 0x7f;

/// Which layout a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    Full,
    Compact,
}

impl Layout {
    /// Bytes the layout takes.
    #[allow(clippy::len_without_is_empty)] // a layout is never empty
    pub const fn len(self) -> usize {
        match self {
            Layout::Full => FULL_LEN,
            Layout::Compact => COMPACT_LEN,
        }
    }

    /// The layout for a UDP payload of `room` bytes: full if it fits, else compact if it fits.
    pub fn for_room(room: usize) -> Option<Layout> {
        if room >= FULL_LEN {
            Some(Layout::Full)
        } else if room >= COMPACT_LEN {
            Some(Layout::Compact)
        } else {
            None
        }
    }

    /// Bits of the sequence number on the wire.
    pub const fn seq_bits(self) -> u32 {
        match self {
            Layout::Full => 32,
            Layout::Compact => 24,
        }
    }
}

/// Smallest frame size (with FCS) that carries a signature: Ethernet 14 + 4 per VLAN tag + IP header
/// (20 or 40) + UDP 8 + compact signature 10 + FCS 4, and never below 64.
///
/// | | 0 tags | 1 tag | 2 tags |
/// |---|---|---|---|
/// | IPv4 | 64 (full) | 64 (compact) | 64 (compact) |
/// | IPv6 | 76 | 80 | 84 |
pub const fn min_frame_size(vlan_tags: usize, ipv6: bool) -> u16 {
    let ip = if ipv6 { 40 } else { 20 };
    let n = 14 + 4 * vlan_tags + ip + 8 + COMPACT_LEN + 4;
    if n < 64 {
        64
    } else {
        n as u16
    }
}

/// The fields of a signature as the receiver reconstructs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signature {
    pub layout: Layout,
    /// Stream id (without the warm-up bit).
    pub stream: u16,
    /// Whether the frame was sent during warm-up.
    pub warmup: bool,
    /// Sequence number as carried (truncated to the layout's bits).
    pub seq: u32,
    /// Transmit timestamp as carried: ns (full layout); low 32 bits of ns / [`COMPACT_TICK_NS`]
    /// (compact layout, extend with [`extend_tx_time`]).
    pub tx_ns: u64,
}

/// Writes a signature into `out` (at least `layout.len()` bytes). Fields wider than the layout are
/// truncated; the stream id must fit (checked when the stream is built).
#[inline]
pub fn write(out: &mut [u8], layout: Layout, stream: u16, warmup: bool, seq: u64, tx_ns: u64) {
    match layout {
        Layout::Full => {
            out[0..4].copy_from_slice(&MAGIC_FULL);
            let s = (stream & MAX_STREAM_FULL) | if warmup { 0x8000 } else { 0 };
            out[4..6].copy_from_slice(&s.to_be_bytes());
            out[6..10].copy_from_slice(&(seq as u32).to_be_bytes());
            out[10..18].copy_from_slice(&tx_ns.to_be_bytes());
        }
        Layout::Compact => {
            out[0..2].copy_from_slice(&MAGIC_COMPACT);
            out[2] = (stream as u8 & MAX_STREAM_COMPACT as u8) | if warmup { 0x80 } else { 0 };
            out[3..6].copy_from_slice(&(seq as u32).to_be_bytes()[1..4]);
            out[6..10].copy_from_slice(&((tx_ns / COMPACT_TICK_NS) as u32).to_be_bytes());
        }
    }
}

/// Reads a signature from the start of a UDP payload. `None` if none is there (too short or wrong
/// magic). Never panics.
#[inline]
pub fn read(payload: &[u8]) -> Option<Signature> {
    if payload.len() >= FULL_LEN && payload[0..4] == MAGIC_FULL {
        let s = u16::from_be_bytes([payload[4], payload[5]]);
        return Some(Signature {
            layout: Layout::Full,
            stream: s & MAX_STREAM_FULL,
            warmup: s & 0x8000 != 0,
            seq: u32::from_be_bytes([payload[6], payload[7], payload[8], payload[9]]),
            tx_ns: u64::from_be_bytes(payload[10..18].try_into().ok()?),
        });
    }
    if payload.len() >= COMPACT_LEN && payload[0..2] == MAGIC_COMPACT {
        let s = payload[2];
        return Some(Signature {
            layout: Layout::Compact,
            stream: (s & 0x7f) as u16,
            warmup: s & 0x80 != 0,
            seq: u32::from_be_bytes([0, payload[3], payload[4], payload[5]]),
            tx_ns: u32::from_be_bytes([payload[6], payload[7], payload[8], payload[9]]) as u64,
        });
    }
    None
}

/// Extends a `bits`-wide truncated counter `v` to the 64-bit value nearest to `reference`
/// (like RTP's extended sequence numbers, RFC 3550 §A.1).
#[inline]
pub fn extend(v: u64, bits: u32, reference: u64) -> u64 {
    if bits >= 64 {
        return v;
    }
    let span = 1u64 << bits;
    let mask = span - 1;
    let cand = (reference & !mask) | (v & mask);
    // Pick among cand - span, cand, cand + span the one closest to reference.
    let mut best = cand;
    let dist = |x: u64| x.abs_diff(reference);
    if cand >= span && dist(cand - span) < dist(best) {
        best = cand - span;
    }
    if let Some(up) = cand.checked_add(span) {
        if dist(up) < dist(best) {
            best = up;
        }
    }
    best
}

/// The full transmit time (ns) of a compact signature received at `rx_ns`: the latest tick at or
/// before `rx_ns`'s tick whose low 32 bits are `tx_low`, times [`COMPACT_TICK_NS`].
#[inline]
pub fn extend_tx_time(tx_low: u32, rx_ns: u64) -> u64 {
    let rx_tick = rx_ns / COMPACT_TICK_NS;
    let back = (rx_tick as u32).wrapping_sub(tx_low) as u64;
    rx_tick.saturating_sub(back) * COMPACT_TICK_NS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_layout_bytes_are_exact() {
        let mut b = [0u8; 18];
        write(
            &mut b,
            Layout::Full,
            0x0102,
            false,
            0x0a0b0c0d,
            0x1122334455667788,
        );
        assert_eq!(
            b,
            [
                0x76, 0x53, 0x47, 0x31, 0x01, 0x02, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33, 0x44,
                0x55, 0x66, 0x77, 0x88
            ]
        );
        let s = read(&b).unwrap();
        assert_eq!(
            (s.layout, s.stream, s.warmup, s.seq, s.tx_ns),
            (Layout::Full, 0x102, false, 0x0a0b0c0d, 0x1122334455667788)
        );
    }

    #[test]
    fn compact_layout_bytes_are_exact() {
        let mut b = [0u8; 10];
        write(
            &mut b,
            Layout::Compact,
            5,
            true,
            0x01_abcdef,
            0x99_deadbeef * 16 + 7,
        );
        assert_eq!(
            b,
            [0xc5, 0xa7, 0x85, 0xab, 0xcd, 0xef, 0xde, 0xad, 0xbe, 0xef]
        );
        let s = read(&b).unwrap();
        assert_eq!(
            (s.layout, s.stream, s.warmup, s.seq, s.tx_ns),
            (Layout::Compact, 5, true, 0xabcdef, 0xdeadbeef)
        );
    }

    #[test]
    fn short_or_foreign_payloads_are_not_signatures() {
        assert!(read(&[]).is_none());
        assert!(read(&MAGIC_FULL).is_none());
        assert!(read(&[0u8; 40]).is_none());
        // Full magic but only compact room, and not the compact magic either.
        let mut b = [0u8; 12];
        b[..4].copy_from_slice(&MAGIC_FULL);
        assert!(read(&b).is_none());
    }

    #[test]
    fn extend_handles_wrap_both_ways() {
        assert_eq!(extend(5, 24, 3), 5);
        assert_eq!(extend(2, 24, (1 << 24) - 3), (1 << 24) + 2); // wrapped forward
        assert_eq!(extend((1 << 24) - 2, 24, (1 << 24) + 1), (1 << 24) - 2); // late frame from before the wrap
        assert_eq!(extend(7, 32, 0), 7);
        assert_eq!(extend(0xffff_fff0, 32, 0), 0xffff_fff0); // cannot go below zero
        assert_eq!(extend(9, 64, 100), 9);
    }

    #[test]
    fn compact_tx_time_is_recovered_from_rx_time() {
        let tick = COMPACT_TICK_NS;
        let tx: u64 = (7 * (1 << 32) + 0xffff_ff00) * tick; // just before a 32-bit tick wrap
        let low = (tx / tick) as u32;
        let rx = tx + 0x200 * tick; // received after the wrap
        assert_eq!(extend_tx_time(low, rx), tx);
        assert_eq!(extend_tx_time(low, tx), tx);
        // A transmit time between ticks reads as the tick's start (up to 15 ns early).
        assert_eq!(extend_tx_time(((tx + 9) / tick) as u32, rx), tx);
    }

    #[test]
    fn compact_timestamp_does_not_wrap_within_a_minute_long_trial() {
        // A frame sent 1 s into a trial and received 60 s later (latency 60 s, impossible in
        // practice; 4.29 s wrapped the old 1 ns field) still reads its true transmit time.
        let mut b = [0u8; COMPACT_LEN];
        let tx = 1_000_000_000u64 + 123 * COMPACT_TICK_NS;
        write(&mut b, Layout::Compact, 1, false, 0, tx);
        let s = read(&b).unwrap();
        assert_eq!(extend_tx_time(s.tx_ns as u32, tx + 60_000_000_000), tx);
        assert_eq!(extend_tx_time(s.tx_ns as u32, tx + 5_000_000_000), tx);
    }

    #[test]
    fn minimum_sizes_table() {
        assert_eq!(min_frame_size(0, false), 64);
        assert_eq!(min_frame_size(2, false), 64);
        assert_eq!(min_frame_size(0, true), 76);
        assert_eq!(min_frame_size(1, true), 80);
        assert_eq!(min_frame_size(2, true), 84);
        // 64-byte IPv4 frames: 18 payload bytes untagged (full), 14 and 10 with tags (compact).
        assert_eq!(Layout::for_room(64 - 4 - 14 - 20 - 8), Some(Layout::Full));
        assert_eq!(
            Layout::for_room(64 - 4 - 18 - 20 - 8),
            Some(Layout::Compact)
        );
        assert_eq!(
            Layout::for_room(64 - 4 - 22 - 20 - 8),
            Some(Layout::Compact)
        );
        assert_eq!(Layout::for_room(9), None);
    }
}
