//! The TX ring: fixed slots filled by `tx_burst`, handed to the kernel with one `sendto` kick, and
//! counted as sent only when the kernel gives them back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;

use super::config::RxMode;
use super::stats::AfPacketStats;
use super::sys;
use crate::shm::ShmRegion;
use crate::PortStats;

/// Where the fields of a TX slot header are: `tpacket3_hdr` (block mode) or `tpacket2_hdr`
/// (frame mode); the kernel reads `tp_len` and the data at `tp_hdrlen - sizeof(sockaddr_ll)`.
#[derive(Debug, Clone, Copy)]
pub(super) struct TxLayout {
    status: usize,
    len: usize,
    snaplen: usize,
    /// `tp_next_offset`, which V3 requires to be 0.
    next_offset: Option<usize>,
    pub(super) data: usize,
}

impl TxLayout {
    pub(super) fn of(mode: RxMode) -> TxLayout {
        match mode {
            RxMode::Block => TxLayout {
                status: sys::hdr3::STATUS,
                len: sys::hdr3::LEN,
                snaplen: sys::hdr3::SNAPLEN,
                next_offset: Some(sys::hdr3::NEXT_OFFSET),
                data: sys::hdr3::SIZE,
            },
            RxMode::Frame => TxLayout {
                status: sys::hdr2::STATUS,
                len: sys::hdr2::LEN,
                snaplen: sys::hdr2::SNAPLEN,
                next_offset: None,
                data: sys::hdr2::SIZE,
            },
        }
    }
}

/// The TX ring: `slots` fixed slots of `frame_size` bytes, `per_block` to a block (slots never
/// straddle blocks), and where filling and completion stand.
///
/// A slot goes AVAILABLE → (we fill it) SEND_REQUEST → (a kick: the kernel builds an skb)
/// SENDING → (the skb is freed: sent, or handed on by a virtual device) AVAILABLE. The kernel
/// takes SEND_REQUEST slots strictly in ring order, from its own head, which only moves past a
/// slot it has taken; a kick that runs out of socket buffer (EAGAIN) or whose frame the qdisc
/// refuses (ENOBUFS) leaves that slot and every later one in SEND_REQUEST for the next kick. So
/// the slots in flight are one contiguous run `oldest..next`, of which a tail may still wait for a
/// kick; a frame is counted as sent only when its slot comes back AVAILABLE ([`TxRing::complete`]).
#[derive(Debug)]
pub(super) struct TxRing {
    mem: Arc<ShmRegion>,
    /// Where the ring starts in `mem`.
    start: usize,
    block_size: usize,
    frame_size: usize,
    per_block: usize,
    slots: usize,
    layout: TxLayout,
    /// The next slot to fill.
    next: usize,
    /// The oldest slot handed over (SEND_REQUEST or later) and not yet seen back.
    oldest: usize,
    /// Slots from `oldest` up to `next`: placed in the ring, not yet given back by the kernel.
    in_flight: usize,
    /// Frame length of each slot when it was placed: our own copy, so that what is counted as sent
    /// does not depend on memory the kernel can write.
    lens: Vec<u32>,
    /// Slots the kernel has given back since the ring was made: progress, whatever the slot.
    completed: u64,
    /// Set by a kick that left frames waiting: `completed` then, and when. A later such kick that
    /// finds `completed` unchanged knows the kernel's head has not moved since ([`Self::head_stalled`]).
    stalled: Option<(u64, Instant)>,
}

/// How long the oldest frame waiting to be sent may be refused at every kick, on a link that is
/// up, before the port gives it up together with the frames queued behind it. The kernel sends
/// a ring's slots strictly in order and puts a frame its driver dropped back to "send request"
/// (`tpacket_snd`), so one frame the peer can never take (longer than its MTU) would otherwise
/// be re-sent at every kick and hold the ring for good.
pub(super) const TX_STALL_LIMIT: Duration = Duration::from_millis(100);

impl TxRing {
    /// The ring of `slots` slots of `frame_size` bytes (a multiple of 16, larger than
    /// `layout.data`, at most `block_size`), `block_size / frame_size` to a block, at byte `start`
    /// of `mem`. Every access is checked against the region.
    pub(super) fn new(
        mem: Arc<ShmRegion>,
        start: usize,
        block_size: usize,
        frame_size: usize,
        slots: usize,
        layout: TxLayout,
    ) -> TxRing {
        TxRing {
            mem,
            start,
            block_size,
            frame_size,
            per_block: block_size / frame_size,
            slots,
            layout,
            next: 0,
            oldest: 0,
            in_flight: 0,
            lens: vec![0; slots],
            completed: 0,
            stalled: None,
        }
    }

    /// Number of slots.
    pub(super) fn slots(&self) -> usize {
        self.slots
    }

    /// Frames placed in the ring that the kernel has not given back yet.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Whether every slot is in flight.
    pub(super) fn is_full(&self) -> bool {
        self.in_flight == self.slots
    }

    /// Region offset of slot `i` (< slots).
    #[inline]
    fn slot(&self, i: usize) -> usize {
        let block = i / self.per_block;
        let within = i % self.per_block;
        self.start + block * self.block_size + within * self.frame_size
    }

    /// Status word of slot `i` (< slots); reads as busy if it could not be read.
    #[inline]
    fn status(&self, i: usize) -> u32 {
        self.mem
            .load_acquire_u32(self.slot(i) + self.layout.status)
            .unwrap_or(BUSY)
    }

    #[inline]
    fn set_status(&self, i: usize, v: u32) {
        self.mem
            .store_release_u32(self.slot(i) + self.layout.status, v);
    }

    /// Copies packet `h` (`len` bytes, at most the slot's data room) into the next slot and hands
    /// the slot to the kernel (SEND_REQUEST); it goes out at the next kick. Returns false, changing
    /// nothing, when no slot is free.
    pub(super) fn place(&mut self, pool: &Pool, h: u32, len: usize) -> bool {
        debug_assert!(len <= self.frame_size - self.layout.data);
        if self.is_full() || self.status(self.next) & BUSY != 0 {
            return false;
        }
        let slot = self.slot(self.next);
        let lay = self.layout;
        let data = slot + lay.data;
        let mut copied = 0;
        for seg in pool.segments(h) {
            // Never more than `len` (<= frame_size - data offset), whatever the chain says. The
            // slot is ours (not in flight, status checked above).
            let n = seg.len().min(len - copied);
            self.mem.write_from(data + copied, &seg[..n]);
            copied += n;
        }
        // Header fields of the slot we own (offsets < data <= frame_size).
        if let Some(next) = lay.next_offset {
            self.mem.write_u32(slot + next, 0);
        }
        self.mem.write_u32(slot + lay.len, len as u32);
        self.mem.write_u32(slot + lay.snaplen, len as u32);
        self.lens[self.next] = len as u32;
        self.set_status(self.next, sys::TP_STATUS_SEND_REQUEST);
        self.next = (self.next + 1) % self.slots;
        self.in_flight += 1;
        true
    }

    /// Whether some slot in flight still waits for a kick (SEND_REQUEST): the kernel takes slots
    /// in order, so it is enough to look at the newest one.
    pub(super) fn has_unsent(&self) -> bool {
        self.in_flight > 0
            && self.status((self.next + self.slots - 1) % self.slots) & sys::TP_STATUS_SEND_REQUEST
                != 0
    }

    /// Takes back, oldest first, every slot the kernel is done with: counted as sent
    /// (`tx_packets`, `tx_bytes`), or as refused when the kernel marked it `TP_STATUS_WRONG_FORMAT`
    /// (`tx_dropped`, [`AfPacketStats::tx_kernel_rejected`]). Returns the number taken back.
    pub(super) fn complete(&mut self, stats: &mut PortStats, extra: &mut AfPacketStats) -> usize {
        let mut n = 0;
        while self.in_flight > 0 {
            let st = self.status(self.oldest);
            if st & BUSY != 0 {
                break;
            }
            if st & sys::TP_STATUS_WRONG_FORMAT != 0 {
                extra.tx_kernel_rejected += 1;
                stats.tx_dropped += 1;
                self.set_status(self.oldest, sys::TP_STATUS_AVAILABLE);
            } else {
                stats.tx_packets += 1;
                stats.tx_bytes += u64::from(self.lens[self.oldest]);
            }
            self.oldest = (self.oldest + 1) % self.slots;
            self.in_flight -= 1;
            n += 1;
        }
        self.completed += n as u64;
        n
    }

    /// After a kick and [`Self::complete`]: `None` while the kernel makes progress (or nothing
    /// waits), else for how long its head has not moved — a frame was refused at this kick and at
    /// an earlier one, with no slot given back in between. The first refusal only starts the clock.
    pub(super) fn head_stalled(&mut self) -> Option<Duration> {
        if !self.has_unsent() {
            self.stalled = None;
            return None;
        }
        match self.stalled {
            Some((done, since)) if done == self.completed => Some(since.elapsed()),
            _ => {
                self.stalled = Some((self.completed, Instant::now()));
                None
            }
        }
    }

    /// After a kick failed for good (interface down or gone, the kernel took nothing), or after
    /// the kernel's head stalled on a link that is down or for [`TX_STALL_LIMIT`]: takes back
    /// the newest slots that still wait in SEND_REQUEST, so that they neither go out later nor
    /// block the ring, and moves `next` back to the first of them (where the kernel's own head
    /// stands, since it has not taken it). Returns how many were taken back (never sent).
    pub(super) fn reclaim_unsent(&mut self) -> usize {
        let mut n = 0;
        while self.in_flight > 0 {
            let last = (self.next + self.slots - 1) % self.slots;
            if self.status(last) != sys::TP_STATUS_SEND_REQUEST {
                break;
            }
            self.set_status(last, sys::TP_STATUS_AVAILABLE);
            self.next = last;
            self.in_flight -= 1;
            n += 1;
        }
        self.stalled = None;
        n
    }
}

/// Status bits of a slot the kernel has not finished with.
const BUSY: u32 = sys::TP_STATUS_SEND_REQUEST | sys::TP_STATUS_SENDING;
