//! The RX rings: [`RxRing`] (TPACKET_V3 blocks) and [`FrameRing`] (TPACKET_V2 slots), and the copy
//! of a received frame into the pool with its VLAN tag put back.

use std::sync::Arc;

use vecswitch_buffer::{Pool, DATA_SIZE, HEADROOM};

use super::stats::AfPacketStats;
use super::sys;
use super::{ETH_HLEN, ETH_P_8021Q, MAC_ADDRS, VLAN_TAG};
use crate::shm::ShmRegion;
use crate::PortStats;

/// Where the kernel puts an Ethernet frame in a TPACKET_V2 RX slot:
/// `TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - ETH_HLEN` (tpacket_rcv's `macoff`).
pub(super) const V2_RX_MAC: usize = 66;

/// The RX slot size in frame mode: room for the largest frame the interface passes at `mtu`
/// (MTU + Ethernet header + one inner VLAN tag; the outer tag is taken off into the descriptor)
/// after the slot's header area, in 16-byte steps, but never more than `frame_size`. Smaller slots
/// than the TX ring's mean more frames per ring: 5288 instead of 512 at MTU 1500 with 16 KiB
/// TX slots and 8 MiB rings.
pub(super) fn rx_slot_size(frame_size: u32, mtu: usize) -> u32 {
    let need = (V2_RX_MAC + ETH_HLEN + VLAN_TAG).saturating_add(mtu);
    let need = need.saturating_add(15) & !15;
    u32::try_from(need)
        .unwrap_or(u32::MAX)
        .clamp(128, frame_size)
}

/// How full a receive ring was when the worker polled it ([`crate::RingFill`], in blocks in block
/// mode, in slots in frame mode): the most entries the kernel had handed over and not yet read at
/// one poll, at the latest poll, and the polls that found every entry handed over (the kernel
/// drops what arrives meanwhile: `tp_drops`, counted in `rx_dropped`).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Fill {
    pub(super) peak: u32,
    pub(super) last: u32,
    pub(super) full_polls: u64,
}

impl Fill {
    fn note(&mut self, waiting: usize, size: usize) {
        let w = u32::try_from(waiting).unwrap_or(u32::MAX);
        self.last = w;
        self.peak = self.peak.max(w);
        if waiting >= size {
            self.full_polls += 1;
        }
    }
}

/// How many consecutive entries from the reading position the kernel has handed over, of `size`,
/// given that the first one is (`user(0)`). The kernel fills the ring in order, so the handed-over
/// entries are one run from the reading position: galloping (1, 2, 4, … ahead) and then bisecting
/// finds its end in 2·log2(run) status reads, two or three at a steady state, instead of one read
/// per entry. A status the kernel changes meanwhile only makes the count a little stale.
fn waiting(size: usize, user: impl Fn(usize) -> bool) -> usize {
    // `lo` is handed over, `hi` is not (or is `size`).
    let mut lo = 0;
    let mut step = 1;
    let hi = loop {
        let probe = lo + step;
        if probe >= size {
            break size;
        }
        if !user(probe) {
            break probe;
        }
        lo = probe;
        step *= 2;
    };
    let mut hi = hi;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if user(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// The RX ring: `block_count` TPACKET_V3 blocks of `block_size` bytes, and where reading stands.
#[derive(Debug)]
pub(super) struct RxRing {
    mem: Arc<ShmRegion>,
    /// Where the ring starts in `mem`.
    start: usize,
    block_size: usize,
    pub(super) block_count: usize,
    /// The block being read, packets of it already consumed, and the offset of the next one.
    block: usize,
    done: u32,
    offset: usize,
    pub(super) fill: Fill,
}

/// The outer VLAN tag the kernel moved from the frame into the descriptor, as wire bytes; `None`
/// when the descriptor says there was none. `tpid` counts only with `TP_STATUS_VLAN_TPID_VALID`
/// (older kernels give none and mean 802.1Q).
fn vlan_tag(status: u32, tpid: u16, tci: u16) -> Option<[u8; 4]> {
    (status & sys::TP_STATUS_VLAN_VALID != 0).then(|| {
        let tpid = if status & sys::TP_STATUS_VLAN_TPID_VALID != 0 {
            tpid
        } else {
            ETH_P_8021Q
        };
        let mut t = [0u8; 4];
        t[..2].copy_from_slice(&tpid.to_be_bytes());
        t[2..].copy_from_slice(&tci.to_be_bytes());
        t
    })
}

/// Completes the L4 checksum of packet `h` when the kernel says it was left to offload
/// (`TP_STATUS_CSUMNOTREADY` in `status`): a frame from the stack of a veth or tap peer whose
/// device "offloads" checksums carries only the pseudo-header sum, and would be dropped by its
/// receiver after the switch sent it on. Counted in `rx_csum_completed` or `rx_csum_incomplete`.
fn finish_checksum(pool: &mut Pool, h: u32, status: u32, extra: &mut AfPacketStats) {
    if status & sys::TP_STATUS_CSUMNOTREADY == 0 {
        return;
    }
    let whole = pool.header(h).total_len as usize == pool.data(h).len();
    if whole && complete_checksum(pool.data_mut(h)) {
        extra.rx_csum_completed += 1;
    } else {
        extra.rx_csum_incomplete += 1;
    }
}

/// Completes a partial (`CHECKSUM_PARTIAL`) TCP or UDP checksum in `frame` the way the kernel's
/// `skb_checksum_help` does: the checksum field holds the pseudo-header sum, so the one's-complement
/// sum over the L4 header and payload, field included, complemented, is the checksum (RFC 1071; a
/// UDP result of 0 is sent as 0xffff, RFC 768). Parses Ethernet with up to two VLAN tags, then
/// IPv4 (not a fragment) or IPv6 (TCP/UDP as the first next header). Returns false, changing
/// nothing, for anything else or when a length does not fit the frame.
pub(super) fn complete_checksum(frame: &mut [u8]) -> bool {
    const TCP: u8 = 6;
    const UDP: u8 = 17;
    let be16 = |f: &[u8], at: usize| f.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let mut off = MAC_ADDRS;
    let mut ethertype = be16(frame, off);
    for _ in 0..2 {
        if matches!(ethertype, Some(0x8100) | Some(0x88a8)) {
            off += VLAN_TAG;
            ethertype = be16(frame, off);
        }
    }
    let l3 = off + 2;
    let (proto, l4, end) = match ethertype {
        // RFC 791 §3.1.
        Some(0x0800) => {
            let Some(&vihl) = frame.get(l3) else {
                return false;
            };
            let ihl = usize::from(vihl & 0x0f) * 4;
            let (Some(total), Some(frag), Some(&proto)) =
                (be16(frame, l3 + 2), be16(frame, l3 + 6), frame.get(l3 + 9))
            else {
                return false;
            };
            // More fragments, or a fragment offset: not the whole datagram.
            if vihl >> 4 != 4 || ihl < 20 || frag & 0x3fff != 0 {
                return false;
            }
            (proto, l3 + ihl, l3 + usize::from(total))
        }
        // RFC 8200 §3.
        Some(0x86dd) => {
            let (Some(payload), Some(&next)) = (be16(frame, l3 + 4), frame.get(l3 + 6)) else {
                return false;
            };
            (next, l3 + 40, l3 + 40 + usize::from(payload))
        }
        _ => return false,
    };
    let field = match proto {
        TCP => l4 + 16, // RFC 9293 §3.1
        UDP => l4 + 6,  // RFC 768
        _ => return false,
    };
    if end > frame.len() || field + 2 > end || l4 > end {
        return false;
    }
    let mut c = !vecswitch_wire::checksum::sum(&frame[l4..end]);
    if proto == UDP && c == 0 {
        c = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Copies the `len` bytes at `off` of `mem` into a new pool packet (chained when longer than one
/// buffer), putting `tag` back after the two MAC addresses when the kernel took the outer VLAN tag
/// off. `None` if the bytes are not inside `mem` or the pool is empty. The caller reads only a
/// block or slot that is ours (status `TP_STATUS_USER`), which the kernel does not write meanwhile.
fn copy_in(
    pool: &mut Pool,
    mem: &ShmRegion,
    off: usize,
    len: usize,
    tag: Option<[u8; 4]>,
) -> Option<u32> {
    if off.checked_add(len)? > mem.len() {
        return None;
    }
    // A tag goes after the MAC addresses; a frame too short to have them keeps no tag.
    let tag = tag.filter(|_| len >= MAC_ADDRS);
    let total = len + if tag.is_some() { VLAN_TAG } else { 0 };
    let h = pool.alloc()?;
    let first = total.min(DATA_SIZE);
    let dst = &mut pool.raw_mut(h)[HEADROOM..HEADROOM + first];
    let mut done = match tag {
        None => {
            mem.read_into(off, dst);
            first
        }
        Some(t) => {
            // `first` = min(len + 4, DATA_SIZE) >= 16, and 12 + rest <= len source bytes are read.
            let rest = first - MAC_ADDRS - VLAN_TAG;
            mem.read_into(off, &mut dst[..MAC_ADDRS]);
            mem.read_into(off + MAC_ADDRS, &mut dst[MAC_ADDRS + VLAN_TAG..]);
            dst[MAC_ADDRS..MAC_ADDRS + VLAN_TAG].copy_from_slice(&t);
            MAC_ADDRS + rest
        }
    };
    pool.set_len(h, first);
    let mut seg = [0u8; DATA_SIZE];
    while done < len {
        let n = (len - done).min(DATA_SIZE);
        mem.read_into(off + done, &mut seg[..n]);
        if !pool.append_segment(h, &seg[..n]) {
            pool.free(h);
            return None;
        }
        done += n;
    }
    Some(h)
}

impl RxRing {
    /// The ring of `block_count` blocks of `block_size` bytes (a multiple of 16) at byte `start`
    /// of `mem`. Every access is checked against the current block and the region.
    pub(super) fn new(
        mem: Arc<ShmRegion>,
        start: usize,
        block_size: usize,
        block_count: usize,
    ) -> RxRing {
        RxRing {
            mem,
            start,
            block_size,
            block_count,
            block: 0,
            done: 0,
            offset: 0,
            fill: Fill::default(),
        }
    }

    /// Region offset of byte `off` of the current block, if `len` bytes from there lie inside the
    /// block.
    #[inline]
    fn at(&self, off: usize, len: usize) -> Option<usize> {
        let end = off.checked_add(len)?;
        (end <= self.block_size).then(|| self.start + self.block * self.block_size + off)
    }

    /// The `u32` at `off` of the current block; 0 if it is not an aligned field inside the block.
    #[inline]
    fn u32_at(&self, off: usize) -> u32 {
        self.at(off, 4)
            .and_then(|o| self.mem.read_u32(o))
            .unwrap_or(0)
    }

    /// The `u16` at `off` of the current block; 0 if it is not an aligned field inside the block.
    #[inline]
    fn u16_at(&self, off: usize) -> u16 {
        self.at(off, 2)
            .and_then(|o| self.mem.read_u16(o))
            .unwrap_or(0)
    }

    /// The byte at `off` of the current block; 0 if outside it.
    #[inline]
    fn u8_at(&self, off: usize) -> u8 {
        self.at(off, 1)
            .and_then(|o| self.mem.read_u8(o))
            .unwrap_or(0)
    }

    /// Region offset of the current block's status word.
    #[inline]
    fn status_at(&self) -> usize {
        self.start + self.block * self.block_size + sys::block::STATUS
    }

    /// The current block's status word (0, kernel-owned, if it could not be read).
    #[inline]
    fn status(&self) -> u32 {
        self.mem.load_acquire_u32(self.status_at()).unwrap_or(0)
    }

    /// Whether the block `ahead` blocks after the current one is handed over to the reader.
    #[inline]
    fn user_ahead(&self, ahead: usize) -> bool {
        let b = (self.block + ahead) % self.block_count;
        let at = self.start + b * self.block_size + sys::block::STATUS;
        self.mem.load_acquire_u32(at).unwrap_or(0) & sys::TP_STATUS_USER != 0
    }

    /// Returns the current block to the kernel and moves to the next one.
    fn release_block(&mut self) {
        self.mem
            .store_release_u32(self.status_at(), sys::TP_STATUS_KERNEL);
        self.block = (self.block + 1) % self.block_count;
        self.done = 0;
        self.offset = 0;
    }

    /// Copies the `len` bytes at `off` of the current block into a new pool packet (see
    /// [`copy_in`]). `None` if the bytes are not inside the block or the pool is empty.
    fn copy_in(
        &self,
        pool: &mut Pool,
        off: usize,
        len: usize,
        tag: Option<[u8; 4]>,
    ) -> Option<u32> {
        let at = self.at(off, len)?;
        copy_in(pool, &self.mem, at, len, tag)
    }

    /// Moves up to `max` frames from ready blocks into `pool`, appending handles to `out`.
    /// Descriptors are bounds-checked against their block before use: a bad one drops the rest of
    /// its block (counted once in `rx_bad_descriptor`), never reads outside the ring.
    pub(super) fn burst(
        &mut self,
        pool: &mut Pool,
        out: &mut Vec<u32>,
        max: usize,
        stats: &mut PortStats,
        extra: &mut AfPacketStats,
    ) -> usize {
        let mut got = 0;
        let waiting = if self.status() & sys::TP_STATUS_USER == 0 {
            0
        } else {
            waiting(self.block_count, |i| self.user_ahead(i))
        };
        self.fill.note(waiting, self.block_count);
        // Visit every block at most once per burst.
        let mut blocks_seen = 0;
        while got < max && blocks_seen < self.block_count {
            if self.status() & sys::TP_STATUS_USER == 0 {
                break;
            }
            let num = self.u32_at(sys::block::NUM_PKTS);
            if self.done == 0 && self.offset == 0 {
                self.offset = self.u32_at(sys::block::OFFSET_TO_FIRST_PKT) as usize;
            }
            while got < max && self.done < num {
                let off = self.offset;
                if off & 3 != 0 || self.at(off, sys::hdr3::HDRLEN).is_none() {
                    extra.rx_bad_descriptor += 1;
                    stats.rx_dropped += 1;
                    self.done = num;
                    break;
                }
                let next = self.u32_at(off + sys::hdr3::NEXT_OFFSET) as usize;
                let snaplen = self.u32_at(off + sys::hdr3::SNAPLEN) as usize;
                let wire_len = self.u32_at(off + sys::hdr3::LEN) as usize;
                let mac = usize::from(self.u16_at(off + sys::hdr3::MAC));
                let pkttype = self.u8_at(off + sys::hdr3::PKTTYPE);
                let status = self.u32_at(off + sys::hdr3::STATUS);
                self.done += 1;
                self.offset = off + next;
                if self.at(off + mac, snaplen).is_none() || (next == 0 && self.done < num) {
                    extra.rx_bad_descriptor += 1;
                    stats.rx_dropped += 1;
                    self.done = num;
                    break;
                }
                if pkttype == sys::PACKET_OUTGOING {
                    extra.rx_outgoing_ignored += 1;
                    continue;
                }
                if snaplen < wire_len {
                    extra.rx_truncated += 1;
                    stats.rx_dropped += 1;
                    continue;
                }
                // The kernel moves the outer VLAN tag into the descriptor (skb_vlan_untag on
                // receive); the switch must see the frame as it was on the wire (IEEE 802.1Q §9.3).
                let tag = vlan_tag(
                    status,
                    self.u16_at(off + sys::hdr3::VLAN_TPID),
                    self.u32_at(off + sys::hdr3::VLAN_TCI) as u16,
                );
                match self.copy_in(pool, off + mac, snaplen, tag) {
                    Some(h) => {
                        finish_checksum(pool, h, status, extra);
                        out.push(h);
                        stats.rx_packets += 1;
                        stats.rx_bytes += u64::from(pool.header(h).total_len);
                        got += 1;
                    }
                    None => {
                        extra.rx_no_buffer += 1;
                        stats.rx_dropped += 1;
                    }
                }
            }
            if self.done >= num {
                self.release_block();
                blocks_seen += 1;
            }
        }
        got
    }
}

/// The RX ring in frame mode: `frame_count` TPACKET_V2 slots of `frame_size` bytes,
/// `frames_per_block` to a block (slots never straddle blocks), and the next slot to read.
#[derive(Debug)]
pub(super) struct FrameRing {
    mem: Arc<ShmRegion>,
    /// Where the ring starts in `mem`.
    start: usize,
    block_size: usize,
    pub(super) frame_size: usize,
    frames_per_block: usize,
    pub(super) frame_count: usize,
    next: usize,
    pub(super) fill: Fill,
}

impl FrameRing {
    /// The ring of `frame_count` slots of `frame_size` bytes (a multiple of 16, at least
    /// `sys::hdr2::HDRLEN`), `block_size / frame_size` to a block, at byte `start` of `mem`. Every
    /// access is checked against the slot and the region.
    pub(super) fn new(
        mem: Arc<ShmRegion>,
        start: usize,
        block_size: usize,
        frame_size: usize,
        frame_count: usize,
    ) -> FrameRing {
        FrameRing {
            mem,
            start,
            block_size,
            frame_size,
            frames_per_block: block_size / frame_size,
            frame_count,
            next: 0,
            fill: Fill::default(),
        }
    }

    /// Region offset of slot `i` (< frame_count).
    #[inline]
    fn slot(&self, i: usize) -> usize {
        let block = i / self.frames_per_block;
        let within = i % self.frames_per_block;
        self.start + block * self.block_size + within * self.frame_size
    }

    /// Moves up to `max` frames from user-owned slots into `pool`, appending handles to `out`,
    /// and gives each slot back (`TP_STATUS_KERNEL`) as soon as it is read. A descriptor whose
    /// frame does not lie inside its own slot is dropped (`rx_bad_descriptor`), never read.
    pub(super) fn burst(
        &mut self,
        pool: &mut Pool,
        out: &mut Vec<u32>,
        max: usize,
        stats: &mut PortStats,
        extra: &mut AfPacketStats,
    ) -> usize {
        let mut got = 0;
        let user = |i: usize| {
            let s = self.slot((self.next + i) % self.frame_count);
            self.mem
                .load_acquire_u32(s + sys::hdr2::STATUS)
                .unwrap_or(0)
                & sys::TP_STATUS_USER
                != 0
        };
        let waiting = if user(0) {
            waiting(self.frame_count, user)
        } else {
            0
        };
        self.fill.note(waiting, self.frame_count);
        // Visit every slot at most once per burst.
        let mut seen = 0;
        while got < max && seen < self.frame_count {
            let s = self.slot(self.next);
            let m = &self.mem;
            let status = m.load_acquire_u32(s + sys::hdr2::STATUS).unwrap_or(0);
            if status & sys::TP_STATUS_USER == 0 {
                break;
            }
            // Header fields inside the slot (offsets < HDRLEN <= frame_size); the slot is ours.
            let (wire_len, snaplen, mac, tci, tpid, pkttype) = (
                m.read_u32(s + sys::hdr2::LEN).unwrap_or(0) as usize,
                m.read_u32(s + sys::hdr2::SNAPLEN).unwrap_or(0) as usize,
                usize::from(m.read_u16(s + sys::hdr2::MAC).unwrap_or(0)),
                m.read_u16(s + sys::hdr2::VLAN_TCI).unwrap_or(0),
                m.read_u16(s + sys::hdr2::VLAN_TPID).unwrap_or(0),
                m.read_u8(s + sys::hdr2::PKTTYPE).unwrap_or(0),
            );
            // The kernel puts the frame after the header and sockaddr_ll, inside the slot.
            let inside = mac >= sys::hdr2::HDRLEN
                && mac
                    .checked_add(snaplen)
                    .is_some_and(|end| end <= self.frame_size);
            if !inside {
                extra.rx_bad_descriptor += 1;
                stats.rx_dropped += 1;
            } else if pkttype == sys::PACKET_OUTGOING {
                extra.rx_outgoing_ignored += 1;
            } else if snaplen < wire_len {
                // Longer than the slot (frame_size too small for the MTU): cut by the kernel.
                extra.rx_truncated += 1;
                stats.rx_dropped += 1;
            } else {
                // IEEE 802.1Q §9.3: the frame as it was on the wire (see the block walk).
                let tag = vlan_tag(status, tpid, tci);
                // `s + mac .. s + mac + snaplen` lies inside the slot (checked above), which the
                // kernel does not write while its status is TP_STATUS_USER.
                match copy_in(pool, &self.mem, s + mac, snaplen, tag) {
                    Some(h) => {
                        finish_checksum(pool, h, status, extra);
                        out.push(h);
                        stats.rx_packets += 1;
                        stats.rx_bytes += u64::from(pool.header(h).total_len);
                        got += 1;
                    }
                    None => {
                        extra.rx_no_buffer += 1;
                        stats.rx_dropped += 1;
                    }
                }
            }
            // Hands the slot back to the kernel.
            self.mem
                .store_release_u32(s + sys::hdr2::STATUS, sys::TP_STATUS_KERNEL);
            self.next = (self.next + 1) % self.frame_count;
            seen += 1;
        }
        got
    }
}

/// The RX ring of either mode.
#[derive(Debug)]
pub(super) enum Rx {
    Block(RxRing),
    Frame(FrameRing),
}

/// Entry point for the `af_packet_rx` fuzz target in `crates/ports/fuzz` (not a stable API).
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    /// The input's first byte picks the ring (even: TPACKET_V3 blocks, two of 4 KiB; odd:
    /// TPACKET_V2, four 2 KiB slots in two blocks) and the burst size; the rest is the ring image
    /// as a hostile or buggy kernel could leave it (headers, descriptors, statuses, frames). Four
    /// bursts walk it: nothing outside the ring is read (the region's accessors are checked), every
    /// received frame is counted, fits a ring slot, and every pool buffer comes back. Returns the
    /// frames received.
    pub fn rx_walk(data: &[u8]) -> usize {
        const BLOCK: usize = 4096;
        let Some((&sel, image)) = data.split_first() else {
            return 0;
        };
        let mem = Arc::new(ShmRegion::anonymous(2 * BLOCK).expect("anonymous region"));
        assert!(mem.write_from(0, &image[..image.len().min(2 * BLOCK)]));
        let mut pool = Pool::new(64);
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        let max = 1 + usize::from(sel >> 1) % 64;
        if sel & 1 == 0 {
            let mut ring = RxRing::new(Arc::clone(&mem), 0, BLOCK, 2);
            for _ in 0..4 {
                ring.burst(&mut pool, &mut out, max, &mut stats, &mut extra);
            }
        } else {
            let mut ring = FrameRing::new(Arc::clone(&mem), 0, BLOCK, 2048, 4);
            for _ in 0..4 {
                ring.burst(&mut pool, &mut out, max, &mut stats, &mut extra);
            }
        }
        assert_eq!(stats.rx_packets as usize, out.len(), "every frame counted");
        for &h in &out {
            // A frame is at most its block plus a VLAN tag put back.
            assert!(pool.header(h).total_len as usize <= BLOCK + VLAN_TAG);
        }
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0, "every buffer back in the pool");
        out.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An anonymous shared region standing in for a kernel ring, written through the same
    /// accessors the rings read it with. Shared by the simulated V3 (`FakeRing`) and V2
    /// (`FakeSlots`) rings, which deref to it.
    struct SimMem(Arc<ShmRegion>);

    impl SimMem {
        fn new(bytes: usize) -> SimMem {
            SimMem(Arc::new(ShmRegion::anonymous(bytes).unwrap()))
        }
        /// Writes `bytes` at byte `at`.
        fn put(&mut self, at: usize, bytes: &[u8]) {
            assert!(self.0.write_from(at, bytes), "put at {at} outside the ring");
        }
        fn put32(&mut self, at: usize, v: u32) {
            self.put(at, &v.to_ne_bytes());
        }
        fn get32(&mut self, at: usize) -> u32 {
            let mut b = [0u8; 4];
            assert!(self.0.read_into(at, &mut b));
            u32::from_ne_bytes(b)
        }
    }

    impl std::ops::Deref for FakeRing {
        type Target = SimMem;
        fn deref(&self) -> &SimMem {
            &self.mem
        }
    }
    impl std::ops::DerefMut for FakeRing {
        fn deref_mut(&mut self) -> &mut SimMem {
            &mut self.mem
        }
    }
    impl std::ops::Deref for FakeSlots {
        type Target = SimMem;
        fn deref(&self) -> &SimMem {
            &self.mem
        }
    }
    impl std::ops::DerefMut for FakeSlots {
        fn deref_mut(&mut self) -> &mut SimMem {
            &mut self.mem
        }
    }

    /// A simulated RX ring in ordinary memory, filled the way the kernel fills one.
    struct FakeRing {
        mem: SimMem,
        block_size: usize,
        blocks: usize,
    }

    impl FakeRing {
        fn new(block_size: usize, blocks: usize) -> FakeRing {
            FakeRing {
                mem: SimMem::new(block_size * blocks),
                block_size,
                blocks,
            }
        }
        fn ring(&mut self) -> RxRing {
            RxRing::new(Arc::clone(&self.mem.0), 0, self.block_size, self.blocks)
        }
        /// Fills block `b` with `frames` (bytes, pkttype) and hands it to user space; returns
        /// where each descriptor starts.
        fn fill(&mut self, b: usize, frames: &[(Vec<u8>, u8)]) -> Vec<usize> {
            let mut descs = Vec::new();
            let base = b * self.block_size;
            let mut off = 48;
            self.put32(base + sys::block::OFFSET_TO_FIRST_PKT, off as u32);
            self.put32(base + sys::block::NUM_PKTS, frames.len() as u32);
            for (i, (f, pkttype)) in frames.iter().enumerate() {
                let mac = 80;
                let next = if i + 1 == frames.len() {
                    0
                } else {
                    (mac + f.len() + 15) & !15
                };
                let h = base + off;
                descs.push(h);
                self.put32(h + sys::hdr3::NEXT_OFFSET, next as u32);
                self.put32(h + sys::hdr3::SNAPLEN, f.len() as u32);
                self.put32(h + sys::hdr3::LEN, f.len() as u32);
                self.put(h + sys::hdr3::MAC, &(mac as u16).to_ne_bytes());
                self.put(h + sys::hdr3::PKTTYPE, &[*pkttype]);
                self.put(h + mac, f);
                off += next;
            }
            self.put32(base + sys::block::STATUS, sys::TP_STATUS_USER);
            descs
        }
        fn status(&mut self, b: usize) -> u32 {
            let at = b * self.block_size + sys::block::STATUS;
            self.get32(at)
        }
    }

    fn frame(seq: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_add(seq)).collect()
    }

    #[test]
    fn rx_walk_reads_frames_across_blocks_and_bursts_and_returns_blocks() {
        let mut fake = FakeRing::new(16384, 3);
        fake.fill(
            0,
            &[
                (frame(0, 60), 0),
                (frame(1, 1514), 0),
                (frame(2, 64), sys::PACKET_OUTGOING),
            ],
        );
        fake.fill(1, &[(frame(3, 9000), 0), (frame(4, 60), 0)]);
        let mut ring = fake.ring();
        let mut pool = Pool::new(64);
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        // Burst of 1 stops inside block 0; the block stays ours until it is read to the end.
        assert_eq!(
            ring.burst(&mut pool, &mut out, 1, &mut stats, &mut extra),
            1
        );
        assert_eq!(fake.status(0), sys::TP_STATUS_USER);
        assert_eq!(
            ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra),
            3
        );
        assert_eq!(fake.status(0), sys::TP_STATUS_KERNEL);
        assert_eq!(fake.status(1), sys::TP_STATUS_KERNEL);
        assert_eq!(
            ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra),
            0
        );
        let expected = [frame(0, 60), frame(1, 1514), frame(3, 9000), frame(4, 60)];
        let mut bytes = Vec::new();
        for (h, e) in out.iter().zip(expected.iter()) {
            pool.copy_out(*h, &mut bytes);
            assert_eq!(&bytes, e);
        }
        assert_eq!(out.len(), 4);
        assert_eq!(extra.rx_outgoing_ignored, 1);
        assert_eq!(stats.rx_packets, 4);
        assert_eq!(stats.rx_bytes, 60 + 1514 + 9000 + 60);
        pool.free_bulk(&out);
        // The ring wraps: block 2, then block 0 again.
        fake.fill(2, &[(frame(5, 100), 0)]);
        fake.fill(0, &[(frame(6, 100), 0)]);
        out.clear();
        assert_eq!(
            ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra),
            2
        );
        pool.copy_out(out[1], &mut bytes);
        assert_eq!(bytes, frame(6, 100));
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn rx_walk_puts_back_the_vlan_tag_the_kernel_took_off() {
        let mut fake = FakeRing::new(32768, 1);
        // As the kernel stores them: the outer tag removed from the bytes, kept in the descriptor.
        let descs = fake.fill(
            0,
            &[
                (frame(0, 60), 0),
                (frame(1, 9000), 0),
                (frame(2, 60), 0),
                (frame(3, 8), 0),
            ],
        );
        let tagged = [
            (
                descs[0],
                sys::TP_STATUS_VLAN_VALID | sys::TP_STATUS_VLAN_TPID_VALID,
                0x88a8u16,
                0x6064u32,
            ),
            (
                descs[1],
                sys::TP_STATUS_VLAN_VALID | sys::TP_STATUS_VLAN_TPID_VALID,
                0x8100,
                100,
            ),
            // Old kernels: no TPID given, 802.1Q assumed.
            (descs[2], sys::TP_STATUS_VLAN_VALID, 0x1234, 7),
            // Runt: no room for MAC addresses, the tag is not invented.
            (descs[3], sys::TP_STATUS_VLAN_VALID, 0x8100, 9),
        ];
        for &(d, status, tpid, tci) in &tagged {
            fake.put32(d + sys::hdr3::STATUS, status);
            fake.put32(d + sys::hdr3::VLAN_TCI, tci);
            fake.put(d + sys::hdr3::VLAN_TPID, &tpid.to_ne_bytes());
        }
        let mut ring = fake.ring();
        let mut pool = Pool::new(64);
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        assert_eq!(
            ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra),
            4
        );
        let with_tag = |f: Vec<u8>, tag: [u8; 4]| [&f[..12], &tag[..], &f[12..]].concat();
        let expected = [
            with_tag(frame(0, 60), [0x88, 0xa8, 0x60, 0x64]),
            with_tag(frame(1, 9000), [0x81, 0x00, 0x00, 100]),
            with_tag(frame(2, 60), [0x81, 0x00, 0x00, 7]),
            frame(3, 8),
        ];
        let mut bytes = Vec::new();
        for (h, e) in out.iter().zip(expected.iter()) {
            pool.copy_out(*h, &mut bytes);
            assert_eq!(&bytes, e);
            assert_eq!(pool.header(*h).total_len as usize, e.len());
        }
        assert_eq!(stats.rx_bytes, 64 + 9004 + 64 + 8);
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn rx_walk_drops_truncated_frames_and_counts_empty_pool() {
        let mut fake = FakeRing::new(8192, 1);
        fake.fill(
            0,
            &[(frame(0, 60), 0), (frame(1, 60), 0), (frame(2, 60), 0)],
        );
        // Frame 1 was cut by the kernel: snaplen 60 < len 100.
        let second = 48 + ((80 + 60 + 15) & !15);
        fake.put32(second + sys::hdr3::LEN, 100);
        let mut ring = fake.ring();
        let mut pool = Pool::new(1);
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        assert_eq!(
            ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra),
            1
        );
        assert_eq!(
            (extra.rx_truncated, extra.rx_no_buffer, stats.rx_dropped),
            (1, 1, 2)
        );
        pool.free_bulk(&out);
    }

    #[test]
    fn rx_walk_survives_hostile_descriptors() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut pool = Pool::new(256);
        for round in 0..3000 {
            let mut fake = FakeRing::new(4096, 2);
            fake.fill(
                0,
                &[(frame(0, 60), 0), (frame(1, 200), 0), (frame(2, 1000), 0)],
            );
            fake.fill(1, &[(frame(3, 60), 0)]);
            // Scribble over headers: offsets, lengths, counts, anything.
            for _ in 0..rng.gen_range(1..6) {
                // Mostly block headers and the first descriptors, sometimes anywhere.
                let at = if rng.gen_bool(0.7) {
                    rng.gen_range(0..2) * 4096 + rng.gen_range(0..64) * 4
                } else {
                    rng.gen_range(0..2 * 4096 / 4) * 4
                };
                let v: u32 = match rng.gen_range(0..3) {
                    0 => rng.gen(),
                    1 => rng.gen_range(0..8192),
                    _ => u32::MAX - rng.gen_range(0..64),
                };
                fake.put32(at, v);
            }
            let mut ring = fake.ring();
            let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
            let mut out = Vec::new();
            for _ in 0..4 {
                ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra);
            }
            assert_eq!(stats.rx_packets as usize, out.len(), "round {round}");
            pool.free_bulk(&out);
            assert_eq!(pool.in_use(), 0, "round {round}");
        }
    }

    /// A simulated TPACKET_V2 RX ring: fixed slots, each with its own status, filled the way the
    /// kernel fills them (frame at offset 66 in its slot).
    struct FakeSlots {
        mem: SimMem,
        block_size: usize,
        frame_size: usize,
        count: usize,
    }

    const V2_MAC: usize = V2_RX_MAC;

    impl FakeSlots {
        fn new(block_size: usize, blocks: usize, frame_size: usize) -> FakeSlots {
            FakeSlots {
                mem: SimMem::new(block_size * blocks),
                block_size,
                frame_size,
                count: (block_size / frame_size) * blocks,
            }
        }
        fn ring(&mut self) -> FrameRing {
            FrameRing::new(
                Arc::clone(&self.mem.0),
                0,
                self.block_size,
                self.frame_size,
                self.count,
            )
        }
        fn slot(&self, i: usize) -> usize {
            let per = self.block_size / self.frame_size;
            (i / per) * self.block_size + (i % per) * self.frame_size
        }
        /// Writes `f` into slot `i` and hands the slot to user space; returns the slot's offset.
        fn fill(&mut self, i: usize, f: &[u8], pkttype: u8) -> usize {
            let s = self.slot(i);
            let snap = f.len().min(self.frame_size - V2_MAC);
            self.put32(s + sys::hdr2::LEN, f.len() as u32);
            self.put32(s + sys::hdr2::SNAPLEN, snap as u32);
            self.put(s + sys::hdr2::MAC, &(V2_MAC as u16).to_ne_bytes());
            self.put(s + sys::hdr2::PKTTYPE, &[pkttype]);
            self.put(s + V2_MAC, &f[..snap]);
            self.put32(s + sys::hdr2::STATUS, sys::TP_STATUS_USER);
            s
        }
        fn status(&mut self, i: usize) -> u32 {
            let at = self.slot(i) + sys::hdr2::STATUS;
            self.get32(at)
        }
    }

    fn burst_all(
        ring: &mut FrameRing,
        pool: &mut Pool,
        max: usize,
    ) -> (Vec<u32>, PortStats, AfPacketStats) {
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        ring.burst(pool, &mut out, max, &mut stats, &mut extra);
        (out, stats, extra)
    }

    #[test]
    fn frame_walk_reads_60_1514_9000_in_order_returns_each_slot_and_wraps() {
        // Two blocks of two 16 KiB slots.
        let mut fake = FakeSlots::new(32768, 2, 16384);
        fake.fill(0, &frame(0, 60), 0);
        fake.fill(1, &frame(1, 1514), 0);
        fake.fill(2, &frame(2, 64), sys::PACKET_OUTGOING);
        fake.fill(3, &frame(3, 9000), 0);
        let mut ring = fake.ring();
        let mut pool = Pool::new(64);
        // A burst of 1 takes slot 0 and gives it back at once; slot 1 stays ours until read.
        let (first, _, _) = burst_all(&mut ring, &mut pool, 1);
        assert_eq!(first.len(), 1);
        assert_eq!(fake.status(0), sys::TP_STATUS_KERNEL);
        assert_eq!(fake.status(1), sys::TP_STATUS_USER);
        let (rest, stats, extra) = burst_all(&mut ring, &mut pool, 256);
        assert_eq!(rest.len(), 2);
        for i in 0..4 {
            assert_eq!(fake.status(i), sys::TP_STATUS_KERNEL, "slot {i}");
        }
        let mut bytes = Vec::new();
        let expected = [frame(0, 60), frame(1, 1514), frame(3, 9000)];
        for (h, e) in first.iter().chain(rest.iter()).zip(expected.iter()) {
            pool.copy_out(*h, &mut bytes);
            assert_eq!(&bytes, e);
        }
        assert_eq!(extra.rx_outgoing_ignored, 1);
        assert_eq!((stats.rx_packets, stats.rx_bytes), (2, 1514 + 9000));
        // Nothing ready: the walk stops at the kernel-owned slot 0 (the ring wrapped).
        assert_eq!(burst_all(&mut ring, &mut pool, 256).0.len(), 0);
        fake.fill(0, &frame(4, 100), 0);
        let (again, _, _) = burst_all(&mut ring, &mut pool, 256);
        pool.copy_out(again[0], &mut bytes);
        assert_eq!(bytes, frame(4, 100));
        pool.free_bulk(&first);
        pool.free_bulk(&rest);
        pool.free_bulk(&again);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn waiting_finds_the_end_of_the_handed_over_run_in_few_reads() {
        for size in 1..70 {
            for run in 1..=size {
                let reads = std::cell::Cell::new(0);
                let got = waiting(size, |i| {
                    reads.set(reads.get() + 1);
                    assert!(i < size, "read past the ring: {i} of {size}");
                    i < run
                });
                assert_eq!(got, run, "size {size}");
                // Galloping then bisecting: at most 2·⌈log2(size)⌉ + 1 reads.
                let bound = 2 * (usize::BITS - size.leading_zeros()) as usize + 1;
                assert!(
                    reads.get() <= bound,
                    "{} reads for {run} of {size}",
                    reads.get()
                );
            }
        }
    }

    #[test]
    fn rings_report_how_many_entries_waited_at_each_poll_and_the_full_polls() {
        let mut pool = Pool::new(256);
        let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
        let mut out = Vec::new();
        // Block mode: 2 of 4 blocks handed over, then all 4 (full), then none.
        let mut fake = FakeRing::new(4096, 4);
        let mut ring = fake.ring();
        fake.fill(0, &[(frame(0, 60), 0)]);
        fake.fill(1, &[(frame(1, 60), 0)]);
        ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra);
        assert_eq!(
            (ring.fill.last, ring.fill.peak, ring.fill.full_polls),
            (2, 2, 0)
        );
        for b in [2, 3, 0, 1] {
            fake.fill(b, &[(frame(b as u8, 60), 0)]);
        }
        ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra);
        assert_eq!(
            (ring.fill.last, ring.fill.peak, ring.fill.full_polls),
            (4, 4, 1)
        );
        ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra);
        assert_eq!(
            (ring.fill.last, ring.fill.peak, ring.fill.full_polls),
            (0, 4, 1)
        );
        assert_eq!(out.len(), 6);
        pool.free_bulk(&out);
        // Frame mode: 3 of 8 slots, read one at a time (the count is taken before the burst).
        let mut slots = FakeSlots::new(8192, 2, 2048);
        let mut ring = slots.ring();
        for i in 0..3 {
            slots.fill(i, &frame(i as u8, 60), 0);
        }
        let mut seen = Vec::new();
        for _ in 0..4 {
            let (o, _, _) = burst_all(&mut ring, &mut pool, 1);
            seen.push(ring.fill.last);
            pool.free_bulk(&o);
        }
        assert_eq!(seen, [3, 2, 1, 0]);
        assert_eq!((ring.fill.peak, ring.fill.full_polls), (3, 0));
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn frame_walk_puts_back_the_vlan_tag_the_kernel_took_off() {
        let mut fake = FakeSlots::new(16384, 1, 16384 / 4);
        let tag = |fake: &mut FakeSlots, i, f: &[u8], status, tpid: u16, tci: u16| {
            let s = fake.fill(i, f, 0);
            fake.put32(s + sys::hdr2::STATUS, sys::TP_STATUS_USER | status);
            fake.put(s + sys::hdr2::VLAN_TCI, &tci.to_ne_bytes());
            fake.put(s + sys::hdr2::VLAN_TPID, &tpid.to_ne_bytes());
        };
        tag(
            &mut fake,
            0,
            &frame(0, 60),
            sys::TP_STATUS_VLAN_VALID | sys::TP_STATUS_VLAN_TPID_VALID,
            0x88a8,
            0x6064,
        );
        tag(
            &mut fake,
            1,
            &frame(1, 1514),
            sys::TP_STATUS_VLAN_VALID | sys::TP_STATUS_VLAN_TPID_VALID,
            0x8100,
            100,
        );
        // Old kernels: no TPID given, 802.1Q assumed.
        tag(
            &mut fake,
            2,
            &frame(2, 60),
            sys::TP_STATUS_VLAN_VALID,
            0x1234,
            7,
        );
        // Runt: no room for MAC addresses, the tag is not invented.
        tag(
            &mut fake,
            3,
            &frame(3, 8),
            sys::TP_STATUS_VLAN_VALID,
            0x8100,
            9,
        );
        let mut ring = fake.ring();
        let mut pool = Pool::new(64);
        let (out, stats, _) = burst_all(&mut ring, &mut pool, 256);
        let with_tag = |f: Vec<u8>, tag: [u8; 4]| [&f[..12], &tag[..], &f[12..]].concat();
        let expected = [
            with_tag(frame(0, 60), [0x88, 0xa8, 0x60, 0x64]),
            with_tag(frame(1, 1514), [0x81, 0x00, 0x00, 100]),
            with_tag(frame(2, 60), [0x81, 0x00, 0x00, 7]),
            frame(3, 8),
        ];
        assert_eq!(out.len(), 4);
        let mut bytes = Vec::new();
        for (h, e) in out.iter().zip(expected.iter()) {
            pool.copy_out(*h, &mut bytes);
            assert_eq!(&bytes, e);
            assert_eq!(pool.header(*h).total_len as usize, e.len());
        }
        assert_eq!(stats.rx_bytes, 64 + 1518 + 64 + 8);
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn frame_walk_drops_truncated_out_of_slot_and_unbuffered_frames() {
        let mut fake = FakeSlots::new(8192, 1, 2048);
        // Longer than the slot: the kernel cuts it (snaplen < len).
        fake.fill(0, &frame(0, 3000), 0);
        // Offsets that point outside the slot, or into its header.
        let s1 = fake.fill(1, &frame(1, 60), 0);
        fake.put(s1 + sys::hdr2::MAC, &2040u16.to_ne_bytes());
        let s2 = fake.fill(2, &frame(2, 60), 0);
        fake.put(s2 + sys::hdr2::MAC, &8u16.to_ne_bytes());
        let s3 = fake.fill(3, &frame(3, 60), 0);
        fake.put32(s3 + sys::hdr2::SNAPLEN, u32::MAX);
        fake.put32(s3 + sys::hdr2::LEN, u32::MAX);
        let mut ring = fake.ring();
        let mut pool = Pool::new(1);
        let (out, stats, extra) = burst_all(&mut ring, &mut pool, 256);
        assert!(out.is_empty());
        assert_eq!((extra.rx_truncated, extra.rx_bad_descriptor), (1, 3));
        assert_eq!(stats.rx_dropped, 4);
        for i in 0..4 {
            assert_eq!(fake.status(i), sys::TP_STATUS_KERNEL, "slot {i} given back");
        }
        // An empty pool: counted, slot given back.
        let held = pool.alloc().unwrap();
        fake.fill(0, &frame(4, 60), 0);
        let (out, stats, extra) = burst_all(&mut ring, &mut pool, 256);
        assert!(out.is_empty());
        assert_eq!((extra.rx_no_buffer, stats.rx_dropped), (1, 1));
        assert_eq!(fake.status(0), sys::TP_STATUS_KERNEL);
        pool.free(held);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn frame_walk_survives_hostile_descriptors() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
        let mut pool = Pool::new(256);
        for round in 0..3000 {
            let mut fake = FakeSlots::new(4096, 2, 1024);
            for i in 0..fake.count {
                if rng.gen_bool(0.8) {
                    fake.fill(i, &frame(i as u8, rng.gen_range(1..900)), 0);
                }
            }
            // Scribble over headers: lengths, offsets, statuses, anything.
            for _ in 0..rng.gen_range(1..8) {
                let at = if rng.gen_bool(0.8) {
                    fake.slot(rng.gen_range(0..fake.count)) + rng.gen_range(0..16) * 4
                } else {
                    rng.gen_range(0..2 * 4096 / 4) * 4
                };
                let v: u32 = match rng.gen_range(0..3) {
                    0 => rng.gen(),
                    1 => rng.gen_range(0..4096),
                    _ => u32::MAX - rng.gen_range(0..64),
                };
                fake.put32(at, v);
            }
            let mut ring = fake.ring();
            let (mut stats, mut extra) = (PortStats::default(), AfPacketStats::default());
            let mut out = Vec::new();
            for _ in 0..3 {
                ring.burst(&mut pool, &mut out, 256, &mut stats, &mut extra);
            }
            assert_eq!(stats.rx_packets as usize, out.len(), "round {round}");
            for &h in &out {
                assert!(pool.header(h).total_len as usize <= 1024 - sys::hdr2::HDRLEN + VLAN_TAG);
            }
            pool.free_bulk(&out);
            assert_eq!(pool.in_use(), 0, "round {round}");
        }
    }
    #[test]
    fn frame_mode_rx_slots_fit_the_mtu_within_frame_size() {
        // 66-byte header area + 14 + 4 (inner tag) + MTU, in 16-byte steps.
        assert_eq!(rx_slot_size(2048, 1500), 1584);
        assert_eq!(rx_slot_size(16384, 1500), 1584);
        assert_eq!(rx_slot_size(16384, 9000), 9088);
        // Never more than frame_size, never less than the smallest slot the config accepts.
        assert_eq!(rx_slot_size(1024, 1500), 1024);
        assert_eq!(rx_slot_size(2048, 9000), 2048);
        assert_eq!(rx_slot_size(2048, 0), 128);
        assert_eq!(rx_slot_size(16384, usize::MAX), 16384);
        for mtu in [68, 576, 1500, 4000, 9000] {
            let s = rx_slot_size(16384, mtu) as usize;
            assert_eq!(s % 16, 0);
            assert!(
                s >= V2_RX_MAC + ETH_HLEN + VLAN_TAG + mtu,
                "mtu {mtu}: slot {s}"
            );
        }
    }

    /// A frame as a peer's stack hands it over with checksum offload: `tags` VLAN tags, IPv4 or
    /// IPv6, TCP or UDP, the checksum field holding only the pseudo-header sum. Returns the frame
    /// and the checksum it must end up with.
    fn partial_frame(v6: bool, tcp: bool, tags: usize, payload: usize) -> (Vec<u8>, u16) {
        use vecswitch_wire::checksum::{pseudo_header_v4, pseudo_header_v6, sum};
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
        for _ in 0..tags {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        }
        let l4_len = if tcp { 20 } else { 8 } + payload;
        let proto = if tcp { 6u8 } else { 17 };
        let pseudo = if v6 {
            f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
            f.extend_from_slice(&(l4_len as u16).to_be_bytes());
            f.extend_from_slice(&[proto, 64]);
            let (src, dst) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
            f.extend_from_slice(&std::net::Ipv6Addr::octets(&src));
            f.extend_from_slice(&std::net::Ipv6Addr::octets(&dst));
            pseudo_header_v6(&src, &dst, proto, l4_len as u32)
        } else {
            f.extend_from_slice(&[0x08, 0x00, 0x45, 0]);
            f.extend_from_slice(&((20 + l4_len) as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
            let (src, dst) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
            pseudo_header_v4(&src, &dst, proto, l4_len as u32)
        };
        let l4 = f.len();
        f.extend_from_slice(&[0x30, 0x39, 0x00, 0x50]);
        if tcp {
            f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        } else {
            f.extend_from_slice(&(l4_len as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0]);
        }
        f.extend((0..payload).map(|i| (i * 7 + 3) as u8));
        let field = l4 + if tcp { 16 } else { 6 };
        let full = !vecswitch_wire::checksum::add(pseudo, sum(&f[l4..]));
        f[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
        (f, full)
    }

    #[test]
    fn partial_checksums_are_completed_as_skb_checksum_help_does() {
        for v6 in [false, true] {
            for tcp in [false, true] {
                for tags in [0, 1, 2] {
                    for payload in [0, 1, 18, 1000, 1401] {
                        let (mut f, want) = partial_frame(v6, tcp, tags, payload);
                        let before = f.clone();
                        assert!(complete_checksum(&mut f), "v6 {v6} tcp {tcp} tags {tags}");
                        let field = f.len() - payload - if tcp { 4 } else { 2 };
                        let got = u16::from_be_bytes([f[field], f[field + 1]]);
                        assert_eq!(got, want, "v6 {v6} tcp {tcp} tags {tags} len {payload}");
                        // Only the checksum field changed.
                        let changed: Vec<usize> =
                            (0..f.len()).filter(|&i| f[i] != before[i]).collect();
                        assert!(changed.iter().all(|&i| i == field || i == field + 1));
                    }
                }
            }
        }
    }

    #[test]
    fn partial_checksum_leaves_what_it_cannot_parse_untouched() {
        let (f, _) = partial_frame(false, false, 0, 100);
        let mut cases = vec![f[..30].to_vec(), f[..10].to_vec(), Vec::new()];
        // A fragment, ARP, an unknown protocol, a length beyond the frame, an IPv6 extension header.
        let mut frag = f.clone();
        frag[20] = 0x20;
        cases.push(frag);
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        cases.push(arp);
        let mut sctp = f.clone();
        sctp[23] = 132;
        cases.push(sctp);
        let mut long = f.clone();
        long[16..18].copy_from_slice(&2000u16.to_be_bytes());
        cases.push(long);
        let (mut ext, _) = partial_frame(true, true, 0, 10);
        ext[20] = 0; // hop-by-hop options first
        cases.push(ext);
        for mut c in cases {
            let before = c.clone();
            assert!(!complete_checksum(&mut c));
            assert_eq!(c, before);
        }
    }
}
