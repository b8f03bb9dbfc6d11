//! Shared-memory rings: the layout ([`RingRef`], [`ring_bytes`]), the accessors (over the region's
//! [`ShmRegion`]: volatile and atomic, bounds-checked, never a `&[u8]` into memory the peer writes;
//! no `unsafe` in this file) and the copy-mode data path: [`RxQueue`]
//! fills [`Pool`] packets from descriptors, [`TxQueue`] copies Pool packets into descriptors.
//! Descriptors are untrusted: one naming a missing region or bytes outside its region is dropped and
//! counted in [`MemifErrors`], never followed.
//!
//! Layout (DPDK `memif.h` `memif_ring_t`, 64-byte cache lines): `cookie: u32` at 0, `flags: u16` at
//! 4, `head: u16` at 6, `tail: u16` at 64, descriptors from 128, 16 bytes each: `flags: u16`,
//! `region: u16`, `length: u32`, `offset: u32`, `metadata: u32`.
//!
//! Who moves what (DPDK `rte_eth_memif.c`, VPP `memif/device.c`, copy mode): the client owns the
//! buffers. On the client→server ring (C2S, "S2M") the client is the producer: it fills
//! descriptors and advances `head`; the server consumes and advances `tail`. On the server→client
//! ring (S2C, "M2S") the client posts empty buffers by advancing `head` (descriptor `length` = buffer
//! capacity); the server fills them, sets `length`, and advances `tail`; the client consumes up to
//! `tail` and posts the buffers again. Each side stores its index with Release after writing
//! descriptors and loads the peer's with Acquire before reading them.

use super::sys::Region;
use crate::shm::ShmRegion;
use serde::Serialize;
use std::sync::atomic::Ordering;
use vecswitch_buffer::{Pool, BUFFER_SIZE};

/// `MEMIF_COOKIE`, written by the client in every ring header.
pub const COOKIE: u32 = 0x3E31F20;
/// Ring flag set by the receiver: "do not kick my eventfd, I poll" (`MEMIF_RING_FLAG_MASK_INT`).
pub const RING_FLAG_MASK_INT: u16 = 1;
/// Descriptor flag: the packet continues in the next descriptor (`MEMIF_DESC_FLAG_NEXT`).
pub const DESC_FLAG_NEXT: u16 = 1;
/// Bytes of a ring header (three 64-byte cache lines, the descriptors start at the third).
pub const RING_HEADER_SIZE: usize = 128;
/// Bytes of one descriptor.
pub const DESC_SIZE: usize = 16;
/// Longest frame accepted on receive (a longer chain is dropped as `too_long`).
pub const MAX_FRAME: usize = 65535;
/// Accepted ring sizes, as log2 (DPDK's and VPP's maximum is 14).
pub const LOG2_RING_SIZE_RANGE: std::ops::RangeInclusive<u8> = 1..=14;

mod field {
    pub const COOKIE: usize = 0;
    pub const FLAGS: usize = 4;
    pub const HEAD: usize = 6;
    pub const TAIL: usize = 64;
    pub const D_FLAGS: usize = 0;
    pub const D_REGION: usize = 2;
    pub const D_LENGTH: usize = 4;
    pub const D_OFFSET: usize = 8;
}

/// Bytes of a ring of `2^log2` descriptors, header included.
pub const fn ring_bytes(log2: u8) -> usize {
    RING_HEADER_SIZE + (DESC_SIZE << log2)
}

/// Drop reasons and faults of the shared-memory data path (what `show errors` prints for a memif
/// port). Names are the field names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MemifErrors {
    /// Received descriptor names a region the peer never added.
    pub bad_region: u64,
    /// Received descriptor's offset + length lies outside its region.
    pub out_of_bounds: u64,
    /// Received chain ends (`NEXT` flag) at the last published descriptor.
    pub incomplete_chain: u64,
    /// Received chain longer than [`MAX_FRAME`] bytes.
    pub too_long: u64,
    /// Received packet of zero bytes.
    pub empty: u64,
    /// Receive stopped because the Pool had no free buffer (packets stay in the ring).
    pub no_buffer: u64,
    /// The peer's head/tail index is more than a ring ahead of ours (the ring is not used then).
    pub bad_ring_index: u64,
    /// A transmit descriptor posted by the peer points outside its region (transmit stops).
    pub tx_bad_desc: u64,
    /// Frames not sent because the ring had no room.
    pub tx_ring_full: u64,
    /// Frames not sent because the link was down.
    pub tx_link_down: u64,
}

impl MemifErrors {
    /// `(reason, count)` pairs in a fixed order, as `show errors` prints them.
    pub fn reasons(&self) -> [(&'static str, u64); 10] {
        [
            ("rx-bad-region", self.bad_region),
            ("rx-out-of-bounds", self.out_of_bounds),
            ("rx-incomplete-chain", self.incomplete_chain),
            ("rx-too-long", self.too_long),
            ("rx-empty", self.empty),
            ("rx-no-buffer", self.no_buffer),
            ("bad-ring-index", self.bad_ring_index),
            ("tx-bad-descriptor", self.tx_bad_desc),
            ("tx-ring-full", self.tx_ring_full),
            ("tx-link-down", self.tx_link_down),
        ]
    }
}

/// Packet and byte counts of one burst.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BurstCounts {
    pub packets: u64,
    pub bytes: u64,
    pub dropped: u64,
    /// Receive only: descriptors the producer had published and we had not consumed when the
    /// burst began (the ring's occupancy at this poll).
    pub waiting: u16,
}

/// Why a ring location is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    #[error("ring region {region} does not exist ({have} regions added)")]
    NoRegion { region: u16, have: usize },
    #[error("log2_ring_size {log2} not accepted (accepted: 1..=14)")]
    BadSize { log2: u8 },
    #[error("ring offset {offset} is not 8-byte aligned")]
    Misaligned { offset: u32 },
    #[error("ring at offset {offset} ({bytes} bytes) does not fit region of {len} bytes")]
    OutOfRegion {
        offset: u32,
        bytes: usize,
        len: usize,
    },
    #[error("ring cookie is {found:#x}, expected {COOKIE:#x}")]
    BadCookie { found: u32 },
}

/// A ring's validated location: region index, offset and size. Built only by [`RingRef::new`],
/// which checks that the whole ring lies inside the region, so accessors never leave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingRef {
    region: u16,
    offset: usize,
    log2: u8,
}

impl RingRef {
    pub fn new(
        regions: &[Region],
        region: u16,
        offset: u32,
        log2: u8,
    ) -> Result<RingRef, RingError> {
        if !LOG2_RING_SIZE_RANGE.contains(&log2) {
            return Err(RingError::BadSize { log2 });
        }
        let r = regions.get(region as usize).ok_or(RingError::NoRegion {
            region,
            have: regions.len(),
        })?;
        if offset & 7 != 0 {
            return Err(RingError::Misaligned { offset });
        }
        let bytes = ring_bytes(log2);
        if offset as usize + bytes > r.len() {
            return Err(RingError::OutOfRegion {
                offset,
                bytes,
                len: r.len(),
            });
        }
        Ok(RingRef {
            region,
            offset: offset as usize,
            log2,
        })
    }

    pub fn log2(&self) -> u8 {
        self.log2
    }

    pub fn size(&self) -> u16 {
        1u16 << self.log2
    }

    /// Accessor over the mapped ring. `regions` must be the list the ref was validated against
    /// (regions are only ever appended to, never removed, during a connection).
    pub fn ring<'a>(&self, regions: &'a [Region]) -> Ring<'a> {
        let shm = regions[self.region as usize].shm();
        debug_assert!(self.offset + ring_bytes(self.log2) <= shm.len());
        Ring {
            shm,
            base: self.offset,
            mask: self.size() - 1,
        }
    }
}

/// A decoded descriptor (a snapshot: the peer may change the ring right after).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Desc {
    pub flags: u16,
    pub region: u16,
    pub length: u32,
    pub offset: u32,
}

/// Accessor for one ring in a mapped region. Every access goes through the region's
/// [`ShmRegion`](crate::shm::ShmRegion) accessors — volatile words, atomic indexes, bounded copies —
/// because the peer process writes this memory concurrently. [`RingRef::new`] placed the whole
/// ring inside the region, so no accessor here is refused; were one refused, a read yields 0 and a
/// write does nothing (debug builds assert), never an access outside the mapping.
#[derive(Debug)]
pub struct Ring<'a> {
    shm: &'a ShmRegion,
    /// Offset of the ring header in the region (8-aligned).
    base: usize,
    mask: u16,
}

impl Ring<'_> {
    fn size(&self) -> u16 {
        self.mask.wrapping_add(1)
    }
    fn read_u16(&self, at: usize) -> u16 {
        let v = self.shm.read_u16(self.base + at);
        debug_assert!(
            v.is_some(),
            "ring field at {} outside the region",
            self.base + at
        );
        v.unwrap_or(0)
    }
    fn read_u32(&self, at: usize) -> u32 {
        let v = self.shm.read_u32(self.base + at);
        debug_assert!(
            v.is_some(),
            "ring field at {} outside the region",
            self.base + at
        );
        v.unwrap_or(0)
    }
    fn write_u16(&self, at: usize, v: u16) {
        let ok = self.shm.write_u16(self.base + at, v);
        debug_assert!(ok, "ring field at {} outside the region", self.base + at);
    }
    fn write_u32(&self, at: usize, v: u32) {
        let ok = self.shm.write_u32(self.base + at, v);
        debug_assert!(ok, "ring field at {} outside the region", self.base + at);
    }
    fn load_index(&self, at: usize, o: Ordering) -> u16 {
        let v = self.shm.load_u16(self.base + at, o);
        debug_assert!(
            v.is_some(),
            "ring index at {} outside the region",
            self.base + at
        );
        v.unwrap_or(0)
    }
    fn store_index(&self, at: usize, v: u16, o: Ordering) {
        let ok = self.shm.store_u16(self.base + at, v, o);
        debug_assert!(ok, "ring index at {} outside the region", self.base + at);
    }
    pub fn head(&self, o: Ordering) -> u16 {
        self.load_index(field::HEAD, o)
    }
    pub fn tail(&self, o: Ordering) -> u16 {
        self.load_index(field::TAIL, o)
    }
    pub fn set_head(&self, v: u16, o: Ordering) {
        self.store_index(field::HEAD, v, o)
    }
    pub fn set_tail(&self, v: u16, o: Ordering) {
        self.store_index(field::TAIL, v, o)
    }
    pub fn cookie(&self) -> u32 {
        self.read_u32(field::COOKIE)
    }
    pub fn set_cookie(&self, v: u32) {
        self.write_u32(field::COOKIE, v)
    }
    pub fn flags(&self) -> u16 {
        self.read_u16(field::FLAGS)
    }
    pub fn set_flags(&self, v: u16) {
        self.write_u16(field::FLAGS, v)
    }
    /// Offset (from the ring header) of descriptor `slot`, taken modulo the ring size: inside
    /// ring_bytes(log2), 8-aligned.
    fn desc_at(&self, slot: u16) -> usize {
        RING_HEADER_SIZE + (slot & self.mask) as usize * DESC_SIZE
    }
    /// Reads descriptor `slot` (taken modulo the ring size).
    pub fn desc(&self, slot: u16) -> Desc {
        let d = self.desc_at(slot);
        Desc {
            flags: self.read_u16(d + field::D_FLAGS),
            region: self.read_u16(d + field::D_REGION),
            length: self.read_u32(d + field::D_LENGTH),
            offset: self.read_u32(d + field::D_OFFSET),
        }
    }
    /// Writes descriptor `slot` (metadata is left alone).
    pub fn set_desc(&self, slot: u16, v: Desc) {
        let d = self.desc_at(slot);
        self.write_u16(d + field::D_FLAGS, v.flags);
        self.write_u16(d + field::D_REGION, v.region);
        self.write_u32(d + field::D_LENGTH, v.length);
        self.write_u32(d + field::D_OFFSET, v.offset);
    }
    /// Zeroes the flags of descriptor `slot`.
    pub fn clear_desc_flags(&self, slot: u16) {
        self.write_u16(self.desc_at(slot) + field::D_FLAGS, 0)
    }
    /// Writes only `flags` and `length` of descriptor `slot`.
    pub fn set_desc_len_flags(&self, slot: u16, length: u32, flags: u16) {
        let d = self.desc_at(slot);
        self.write_u16(d + field::D_FLAGS, flags);
        self.write_u32(d + field::D_LENGTH, length);
    }
}

/// A descriptor's buffer, checked to lie inside its region.
#[derive(Debug, Clone, Copy)]
struct Buf<'a> {
    shm: &'a ShmRegion,
    off: usize,
    len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DescFault {
    BadRegion,
    OutOfBounds,
}

fn buffer(regions: &[Region], region: u16, offset: u32, len: u32) -> Result<Buf<'_>, DescFault> {
    let r = regions.get(region as usize).ok_or(DescFault::BadRegion)?;
    if offset as u64 + len as u64 > r.len() as u64 {
        return Err(DescFault::OutOfBounds);
    }
    Ok(Buf {
        shm: r.shm(),
        off: offset as usize,
        len: len as usize,
    })
}

impl Buf<'_> {
    /// Copies `dst.len()` bytes starting `at` bytes into the buffer. Caller: at + dst.len() <= len.
    /// The peer may write the source concurrently; the copy then yields some mix of bytes, which is
    /// what a copy-mode port delivers anyway (the bytes are never trusted).
    fn read(&self, at: usize, dst: &mut [u8]) {
        assert!(at + dst.len() <= self.len);
        let ok = self.shm.read_into(self.off + at, dst);
        debug_assert!(ok, "descriptor buffer checked inside its region");
    }
    /// Copies `src` into the buffer at `at`. Caller: at + src.len() <= len.
    fn write(&self, at: usize, src: &[u8]) {
        assert!(at + src.len() <= self.len);
        let ok = self.shm.write_from(self.off + at, src);
        debug_assert!(ok, "descriptor buffer checked inside its region");
    }
}

/// Which end of the connection a queue belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

/// Where a client's own packet buffers for one ring live: region 0, `base + slot * size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientBuffers {
    pub base: u32,
    pub size: u32,
}

impl ClientBuffers {
    fn desc(&self, slot: u16, mask: u16) -> Desc {
        Desc {
            flags: 0,
            region: 0,
            length: self.size,
            offset: self.base + (slot & mask) as u32 * self.size,
        }
    }
}

/// The receiving end of one ring: server on C2S, client on S2C.
#[derive(Debug)]
pub struct RxQueue {
    ring: RingRef,
    side: Side,
    /// Next slot to consume.
    last: u16,
    /// Client only: our buffers and the next slot to post (our copy of `head`).
    bufs: Option<ClientBuffers>,
    head: u16,
}

impl RxQueue {
    pub fn new(ring: RingRef, side: Side, bufs: Option<ClientBuffers>) -> RxQueue {
        RxQueue {
            ring,
            side,
            last: 0,
            bufs,
            head: 0,
        }
    }

    pub fn ring_ref(&self) -> RingRef {
        self.ring
    }

    /// Client: posts every free buffer to the server (advances `head` to `last + size`).
    pub fn refill(&mut self, regions: &[Region]) {
        let Some(bufs) = self.bufs else { return };
        let ring = self.ring.ring(regions);
        let target = self.last.wrapping_add(ring.size());
        let mut s = self.head;
        while s != target {
            ring.set_desc(s, bufs.desc(s, ring.mask));
            s = s.wrapping_add(1);
        }
        self.head = target;
        ring.set_head(target, Ordering::Release);
    }

    /// Receives up to `max` packets into `pool`, appending handles to `out`.
    pub fn rx(
        &mut self,
        regions: &[Region],
        pool: &mut Pool,
        out: &mut Vec<u32>,
        max: usize,
        err: &mut MemifErrors,
    ) -> BurstCounts {
        let ring = self.ring.ring(regions);
        let size = ring.size();
        let produced = match self.side {
            Side::Server => ring.head(Ordering::Acquire),
            Side::Client => ring.tail(Ordering::Acquire),
        };
        let mut avail = produced.wrapping_sub(self.last);
        let mut c = BurstCounts::default();
        if avail > size {
            err.bad_ring_index += 1;
            return c;
        }
        c.waiting = avail;
        let mut cur = self.last;
        while avail > 0 && (c.packets as usize) < max {
            let start = cur;
            match rx_one(&ring, regions, pool, &mut cur, &mut avail) {
                RxOne::Packet(h, len) => {
                    out.push(h);
                    c.packets += 1;
                    c.bytes += len as u64;
                }
                RxOne::Dropped(reason) => {
                    c.dropped += 1;
                    match reason {
                        RxDrop::BadRegion => err.bad_region += 1,
                        RxDrop::OutOfBounds => err.out_of_bounds += 1,
                        RxDrop::Incomplete => err.incomplete_chain += 1,
                        RxDrop::TooLong => err.too_long += 1,
                        RxDrop::Empty => err.empty += 1,
                    }
                }
                RxOne::NoBuffer => {
                    err.no_buffer += 1;
                    cur = start;
                    break;
                }
            }
        }
        if self.side == Side::Server {
            // Hand the slots back with their flags cleared. DPDK before 26.03 (e.g. 22.11 in Debian
            // 12) transmits with `flags |= MEMIF_DESC_FLAG_NEXT` and never clears the bit, so a slot
            // that once held a chain keeps NEXT on the next lap and would glue unrelated frames
            // together (fixed upstream by "net/memif: fix descriptor Tx flags corruption"). The
            // consumer owns the slots until it publishes `tail`, so clearing them is within the
            // protocol. (A client re-posts its receive slots with flags 0 in `refill`.)
            let mut s = self.last;
            while s != cur {
                ring.clear_desc_flags(s);
                s = s.wrapping_add(1);
            }
        }
        self.last = cur;
        match self.side {
            Side::Server => ring.set_tail(cur, Ordering::Release),
            Side::Client => self.refill(regions),
        }
        c
    }
}

enum RxDrop {
    BadRegion,
    OutOfBounds,
    Incomplete,
    TooLong,
    Empty,
}

enum RxOne {
    Packet(u32, usize),
    Dropped(RxDrop),
    NoBuffer,
}

/// Consumes the descriptors of one packet (a chain) starting at `*cur`.
fn rx_one(
    ring: &Ring<'_>,
    regions: &[Region],
    pool: &mut Pool,
    cur: &mut u16,
    avail: &mut u16,
) -> RxOne {
    let mut head: Option<u32> = None;
    let mut tail = 0u32;
    let mut total = 0usize;
    let mut fault: Option<RxDrop> = None;
    loop {
        if *avail == 0 {
            // The previous descriptor said NEXT but the producer published no more.
            fault.get_or_insert(RxDrop::Incomplete);
            break;
        }
        let d = ring.desc(*cur);
        *cur = cur.wrapping_add(1);
        *avail -= 1;
        if fault.is_none() {
            match buffer(regions, d.region, d.offset, d.length) {
                Err(DescFault::BadRegion) => fault = Some(RxDrop::BadRegion),
                Err(DescFault::OutOfBounds) => fault = Some(RxDrop::OutOfBounds),
                Ok(_) if total + d.length as usize > MAX_FRAME => fault = Some(RxDrop::TooLong),
                Ok(b) => {
                    if head.is_none() {
                        let Some(h) = pool.alloc() else {
                            return RxOne::NoBuffer;
                        };
                        head = Some(h);
                        tail = h;
                    }
                    let h = head.unwrap_or(tail);
                    if !copy_to_pool(pool, h, &mut tail, b) {
                        pool.free(h);
                        return RxOne::NoBuffer;
                    }
                    total += b.len;
                }
            }
        }
        if d.flags & DESC_FLAG_NEXT == 0 {
            break;
        }
    }
    match (fault, head) {
        (Some(f), h) => {
            if let Some(h) = h {
                pool.free(h);
            }
            RxOne::Dropped(f)
        }
        (None, Some(h)) if total > 0 => {
            pool.header_mut(h).total_len = total as u32;
            RxOne::Packet(h, total)
        }
        (None, h) => {
            if let Some(h) = h {
                pool.free(h);
            }
            RxOne::Dropped(RxDrop::Empty)
        }
    }
}

/// Appends the bytes of `src` to packet `head`, filling its last segment `*tail` and chaining new
/// ones with [`Pool::append_segment`]. False if the pool ran out (the caller frees the packet).
fn copy_to_pool(pool: &mut Pool, head: u32, tail: &mut u32, src: Buf<'_>) -> bool {
    let mut done = 0;
    while done < src.len {
        let hdr = pool.header(*tail);
        let (off, len) = (hdr.data_offset as usize, hdr.len as usize);
        let room = BUFFER_SIZE - off - len;
        if room == 0 {
            if !pool.append_segment(head, &[]) {
                return false;
            }
            *tail = pool.header(*tail).next;
            continue;
        }
        let n = room.min(src.len - done);
        src.read(done, &mut pool.raw_mut(*tail)[off + len..off + len + n]);
        pool.header_mut(*tail).len = (len + n) as u16;
        done += n;
    }
    true
}

/// The sending end of one ring: client on C2S, server on S2C.
#[derive(Debug)]
pub struct TxQueue {
    ring: RingRef,
    side: Side,
    /// Next slot to fill (our copy of `head` for a client, of `tail` for a server).
    next: u16,
    /// Client only: our buffers.
    bufs: Option<ClientBuffers>,
}

impl TxQueue {
    pub fn new(ring: RingRef, side: Side, bufs: Option<ClientBuffers>) -> TxQueue {
        TxQueue {
            ring,
            side,
            next: 0,
            bufs,
        }
    }

    pub fn ring_ref(&self) -> RingRef {
        self.ring
    }

    /// Whether the receiver asked not to be kicked (it polls).
    pub fn peer_polls(&self, regions: &[Region]) -> bool {
        self.ring.ring(regions).flags() & RING_FLAG_MASK_INT != 0
    }

    /// Copies packets into the ring until it is full; returns counts of what was sent (a packet is
    /// sent whole or not at all). Frames not sent are counted in `tx_ring_full` or `tx_bad_desc`.
    pub fn tx(
        &mut self,
        regions: &[Region],
        pool: &Pool,
        pkts: &[u32],
        err: &mut MemifErrors,
    ) -> BurstCounts {
        let ring = self.ring.ring(regions);
        let size = ring.size();
        let mut c = BurstCounts::default();
        let mut free = match self.side {
            Side::Client => {
                let used = self.next.wrapping_sub(ring.tail(Ordering::Acquire));
                if used > size {
                    err.bad_ring_index += 1;
                    return c;
                }
                size - used
            }
            Side::Server => {
                let f = ring.head(Ordering::Acquire).wrapping_sub(self.next);
                if f > size {
                    err.bad_ring_index += 1;
                    return c;
                }
                f
            }
        };
        let mut slot = self.next;
        for (i, &h) in pkts.iter().enumerate() {
            let left = (pkts.len() - i) as u64;
            match self.tx_one(&ring, regions, pool, h, slot, free) {
                TxOne::Sent(used, bytes) => {
                    slot = slot.wrapping_add(used);
                    free -= used;
                    c.packets += 1;
                    c.bytes += bytes as u64;
                }
                TxOne::Full => {
                    err.tx_ring_full += left;
                    break;
                }
                TxOne::BadDesc => {
                    err.tx_bad_desc += left;
                    break;
                }
            }
        }
        self.next = slot;
        match self.side {
            Side::Client => ring.set_head(slot, Ordering::Release),
            Side::Server => ring.set_tail(slot, Ordering::Release),
        }
        c
    }

    /// The buffer behind descriptor `slot`: ours (client) or as the peer posted it (server).
    fn dst<'a>(
        &self,
        ring: &Ring<'_>,
        regions: &'a [Region],
        slot: u16,
    ) -> Result<Buf<'a>, DescFault> {
        match self.bufs {
            Some(b) => {
                let d = b.desc(slot, ring.mask);
                ring.set_desc(slot, d);
                buffer(regions, d.region, d.offset, d.length)
            }
            None => {
                let d = ring.desc(slot);
                buffer(regions, d.region, d.offset, d.length)
            }
        }
    }

    fn tx_one(
        &self,
        ring: &Ring<'_>,
        regions: &[Region],
        pool: &Pool,
        h: u32,
        first: u16,
        free: u16,
    ) -> TxOne {
        if free == 0 {
            return TxOne::Full;
        }
        let mut used: u16 = 1;
        let mut slot = first;
        let Ok(mut dst) = self.dst(ring, regions, slot) else {
            return TxOne::BadDesc;
        };
        let mut at = 0usize;
        let mut total = 0usize;
        for seg in pool.segments(h) {
            let mut done = 0;
            while done < seg.len() {
                if at == dst.len {
                    if used == free {
                        return TxOne::Full;
                    }
                    ring.set_desc_len_flags(slot, at as u32, DESC_FLAG_NEXT);
                    slot = slot.wrapping_add(1);
                    used += 1;
                    dst = match self.dst(ring, regions, slot) {
                        Ok(d) => d,
                        Err(_) => return TxOne::BadDesc,
                    };
                    at = 0;
                    continue;
                }
                let n = (dst.len - at).min(seg.len() - done);
                dst.write(at, &seg[done..done + n]);
                at += n;
                done += n;
                total += n;
            }
        }
        ring.set_desc_len_flags(slot, at as u32, 0);
        TxOne::Sent(used, total)
    }
}

enum TxOne {
    Sent(u16, usize),
    Full,
    BadDesc,
}

/// Initializes a ring header written by the client: cookie, no flags, indices at 0.
pub fn init_ring(ring: &Ring<'_>) {
    ring.set_cookie(COOKIE);
    ring.set_flags(0);
    ring.set_head(0, Ordering::Relaxed);
    ring.set_tail(0, Ordering::Relaxed);
}

/// Fuzz entry point: `data` becomes the bytes of a ring (header, descriptors) and its buffers, as a
/// hostile peer could write them; then one receive and one transmit run over it, as server or client
/// (picked by `data[0]`). Nothing may panic, every received packet must be whole, and every Pool
/// buffer must come back.
pub fn fuzz_rings(data: &[u8]) {
    const LOG2: u8 = 4;
    const BSIZE: u32 = 256;
    let rb = ring_bytes(LOG2);
    let len = rb + 16 * BSIZE as usize;
    let Ok(region) = Region::anonymous(len) else {
        return;
    };
    let regions = vec![region];
    let n = data.len().min(len);
    regions[0].shm().write_from(0, &data[..n]);
    let Ok(rr) = RingRef::new(&regions, 0, 0, LOG2) else {
        return;
    };
    let sel = data.first().copied().unwrap_or(0);
    let (side, bufs) = if sel & 1 == 0 {
        (Side::Server, None)
    } else {
        (
            Side::Client,
            Some(ClientBuffers {
                base: rb as u32,
                size: BSIZE,
            }),
        )
    };
    let start = u16::from_le_bytes([
        data.get(1).copied().unwrap_or(0),
        data.get(2).copied().unwrap_or(0),
    ]);
    let mut pool = Pool::new(48);
    let mut err = MemifErrors::default();
    let mut out = Vec::new();
    let mut rx = RxQueue {
        ring: rr,
        side,
        last: start,
        bufs,
        head: start,
    };
    let c = rx.rx(&regions, &mut pool, &mut out, 64, &mut err);
    assert_eq!(c.packets as usize, out.len());
    let mut bytes = 0u64;
    for &h in &out {
        let sum: usize = pool.segments(h).map(|s| s.len()).sum();
        assert_eq!(sum, pool.header(h).total_len as usize);
        assert!(sum > 0 && sum <= MAX_FRAME);
        bytes += sum as u64;
    }
    assert_eq!(bytes, c.bytes);
    pool.free_bulk(&out);
    assert_eq!(pool.in_use(), 0);

    let mut pkts = Vec::new();
    for (i, &b) in data.iter().skip(3).take(8).enumerate() {
        let Some(h) = pool.alloc() else { break };
        let len = (b as usize * 17 + i).min(2 * vecswitch_buffer::DATA_SIZE);
        let fill = vec![b; len.min(vecswitch_buffer::DATA_SIZE)];
        pool.write_packet(h, &fill);
        if len > fill.len() && !pool.append_segment(h, &fill[..len - fill.len()]) {
            pool.free(h);
            break;
        }
        pkts.push(h);
    }
    let mut tx = TxQueue {
        ring: rr,
        side,
        next: start,
        bufs,
    };
    let sent = tx.tx(&regions, &pool, &pkts, &mut err);
    assert!(sent.packets as usize <= pkts.len());
    pool.free_bulk(&pkts);
    assert_eq!(pool.in_use(), 0);
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_buffer::DATA_SIZE;

    const LOG2: u8 = 4;
    const BSIZE: u32 = 256;

    /// One region holding a C2S ring at 0, its buffers after it; a client tx and a server rx on it.
    fn setup() -> (Vec<Region>, TxQueue, RxQueue) {
        let rb = ring_bytes(LOG2);
        let len = rb + (BSIZE as usize) * 16;
        let regions = vec![Region::anonymous(len).unwrap()];
        let rr = RingRef::new(&regions, 0, 0, LOG2).unwrap();
        init_ring(&rr.ring(&regions));
        let bufs = ClientBuffers {
            base: rb as u32,
            size: BSIZE,
        };
        let tx = TxQueue::new(rr, Side::Client, Some(bufs));
        let rx = RxQueue::new(rr, Side::Server, None);
        (regions, tx, rx)
    }

    fn packet(pool: &mut Pool, len: usize, seed: u8) -> u32 {
        let bytes: Vec<u8> = (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect();
        let h = pool.alloc().unwrap();
        let first = len.min(DATA_SIZE);
        assert!(pool.write_packet(h, &bytes[..first]));
        for chunk in bytes[first..].chunks(DATA_SIZE) {
            assert!(pool.append_segment(h, chunk));
        }
        h
    }

    #[test]
    fn ring_ref_rejects_out_of_region_and_bad_sizes() {
        let regions = vec![Region::anonymous(4096).unwrap()];
        assert!(RingRef::new(&regions, 0, 0, 8).is_err()); // 128 + 4096 > 4096
        assert_eq!(
            RingRef::new(&regions, 1, 0, 4),
            Err(RingError::NoRegion { region: 1, have: 1 })
        );
        assert_eq!(
            RingRef::new(&regions, 0, 4, 4),
            Err(RingError::Misaligned { offset: 4 })
        );
        assert_eq!(
            RingRef::new(&regions, 0, 0, 15),
            Err(RingError::BadSize { log2: 15 })
        );
        assert_eq!(
            RingRef::new(&regions, 0, 0, 0),
            Err(RingError::BadSize { log2: 0 })
        );
        let bytes = ring_bytes(4);
        assert!(RingRef::new(&regions, 0, (4096 - bytes) as u32 & !7, 4).is_ok());
        assert!(matches!(
            RingRef::new(&regions, 0, !7u32, 4),
            Err(RingError::OutOfRegion { .. })
        ));
    }

    #[test]
    fn chained_packets_cross_the_ring_intact() {
        let (regions, mut tx, mut rx) = setup();
        let mut pool = Pool::new(256);
        let mut err = MemifErrors::default();
        for &len in &[60usize, 255, 256, 257, 1500, 2049, 3000] {
            let h = packet(&mut pool, len, len as u8);
            let c = tx.tx(&regions, &pool, &[h], &mut err);
            assert_eq!(c.packets, 1, "len {len}");
            let mut out = Vec::new();
            let r = rx.rx(&regions, &mut pool, &mut out, 32, &mut err);
            assert_eq!((r.packets, r.bytes), (1, len as u64));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            pool.copy_out(h, &mut a);
            pool.copy_out(out[0], &mut b);
            assert_eq!(a, b, "len {len}");
            assert_eq!(pool.header(out[0]).total_len as usize, len);
            pool.free(h);
            pool.free(out[0]);
        }
        assert_eq!(err, MemifErrors::default());
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn full_ring_refuses_whole_packets_only() {
        let (regions, mut tx, mut rx) = setup();
        let mut pool = Pool::new(64);
        let mut err = MemifErrors::default();
        // 16 slots of 256 bytes: 5 packets of 3 descriptors fit, the 6th does not (1 slot left).
        let pkts: Vec<u32> = (0..6).map(|i| packet(&mut pool, 700, i)).collect();
        let c = tx.tx(&regions, &pool, &pkts, &mut err);
        assert_eq!(c.packets, 5);
        assert_eq!(err.tx_ring_full, 1);
        let mut out = Vec::new();
        assert_eq!(
            rx.rx(&regions, &mut pool, &mut out, 64, &mut err).packets,
            5
        );
        // Slots are free again: the 6th goes now.
        assert_eq!(tx.tx(&regions, &pool, &pkts[5..], &mut err).packets, 1);
        assert_eq!(
            rx.rx(&regions, &mut pool, &mut out, 64, &mut err).packets,
            1
        );
        pool.free_bulk(&pkts);
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    /// Publishes raw descriptors as a hostile client would, then receives as the server.
    fn rx_raw(descs: &[Desc]) -> (BurstCounts, MemifErrors, Pool) {
        let (regions, _tx, mut rx) = setup();
        let ring = rx.ring.ring(&regions);
        for (i, d) in descs.iter().enumerate() {
            ring.set_desc(i as u16, *d);
        }
        ring.set_head(descs.len() as u16, Ordering::Release);
        let mut pool = Pool::new(64);
        let mut out = Vec::new();
        let mut err = MemifErrors::default();
        let c = rx.rx(&regions, &mut pool, &mut out, 64, &mut err);
        assert_eq!(out.len() as u64, c.packets);
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0, "no buffer leaked");
        (c, err, pool)
    }

    #[test]
    fn descriptor_outside_region_is_dropped_and_counted() {
        let rb = ring_bytes(LOG2) as u32;
        let region_len = rb + BSIZE * 16;
        let ok = Desc {
            flags: 0,
            region: 0,
            length: 60,
            offset: rb,
        };
        let cases = [
            (Desc { region: 1, ..ok }, "rx-bad-region"),
            (
                Desc {
                    offset: region_len - 59,
                    ..ok
                },
                "rx-out-of-bounds",
            ),
            (
                Desc {
                    offset: u32::MAX,
                    ..ok
                },
                "rx-out-of-bounds",
            ),
            (
                Desc {
                    length: u32::MAX,
                    ..ok
                },
                "rx-out-of-bounds",
            ),
            (Desc { length: 0, ..ok }, "rx-empty"),
        ];
        for (bad, reason) in cases {
            let (c, err, _) = rx_raw(&[ok, bad, ok]);
            assert_eq!((c.packets, c.dropped), (2, 1), "{reason}: {bad:?}");
            let counted: Vec<_> = err.reasons().into_iter().filter(|r| r.1 > 0).collect();
            assert_eq!(counted, vec![(reason, 1)], "{bad:?}");
        }
        // Exactly at the end of the region is fine.
        let (c, _, _) = rx_raw(&[Desc {
            offset: region_len - 60,
            ..ok
        }]);
        assert_eq!(c.packets, 1);
    }

    #[test]
    fn bad_descriptor_inside_chain_drops_whole_chain() {
        let rb = ring_bytes(LOG2) as u32;
        let next = Desc {
            flags: DESC_FLAG_NEXT,
            region: 0,
            length: 100,
            offset: rb,
        };
        let bad = Desc {
            flags: DESC_FLAG_NEXT,
            region: 9,
            length: 100,
            offset: rb,
        };
        let last = Desc { flags: 0, ..next };
        let (c, err, _) = rx_raw(&[next, bad, next, last, last]);
        assert_eq!((c.packets, c.dropped), (1, 1));
        assert_eq!(err.bad_region, 1);
    }

    #[test]
    fn server_rx_clears_flags_so_stale_next_bits_cannot_glue_frames() {
        // A producer that only ever ORs NEXT in (DPDK 22.11's memif Tx) and never clears it.
        let (regions, _tx, mut rx) = setup();
        let ring = rx.ring.ring(&regions);
        let rb = ring_bytes(LOG2) as u32;
        let mut pool = Pool::new(64);
        let mut err = MemifErrors::default();
        let mut out = Vec::new();
        let mut head = 0u16;
        let put = |head: &mut u16, next: bool| {
            let d = ring.desc(*head);
            let flags = d.flags | if next { DESC_FLAG_NEXT } else { 0 };
            ring.set_desc(
                *head,
                Desc {
                    flags,
                    region: 0,
                    length: 100,
                    offset: rb,
                },
            );
            *head = head.wrapping_add(1);
        };
        // Lap 1: 8 chains of 2 descriptors.
        for _ in 0..8 {
            put(&mut head, true);
            put(&mut head, false);
        }
        ring.set_head(head, Ordering::Release);
        assert_eq!(
            rx.rx(&regions, &mut pool, &mut out, 64, &mut err).packets,
            8
        );
        // Lap 2: 16 single-descriptor frames in the same slots.
        for _ in 0..16 {
            put(&mut head, false);
        }
        ring.set_head(head, Ordering::Release);
        let c = rx.rx(&regions, &mut pool, &mut out, 64, &mut err);
        assert_eq!((c.packets, c.bytes), (16, 1600));
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn chain_cut_at_head_is_incomplete() {
        let rb = ring_bytes(LOG2) as u32;
        let next = Desc {
            flags: DESC_FLAG_NEXT,
            region: 0,
            length: 100,
            offset: rb,
        };
        let (c, err, _) = rx_raw(&[next, next]);
        assert_eq!((c.packets, c.dropped), (0, 1));
        assert_eq!(err.incomplete_chain, 1);
    }

    #[test]
    fn head_more_than_a_ring_ahead_is_refused() {
        let (regions, _tx, mut rx) = setup();
        rx.ring.ring(&regions).set_head(17, Ordering::Release);
        let mut pool = Pool::new(8);
        let mut err = MemifErrors::default();
        let c = rx.rx(&regions, &mut pool, &mut Vec::new(), 64, &mut err);
        assert_eq!(c, BurstCounts::default());
        assert_eq!(err.bad_ring_index, 1);
        assert_eq!(pool.in_use(), 0);
    }

    #[test]
    fn pool_exhaustion_leaves_packets_in_ring() {
        let (regions, mut tx, mut rx) = setup();
        let mut pool = Pool::new(8);
        let mut err = MemifErrors::default();
        let pkts: Vec<u32> = (0..4).map(|i| packet(&mut pool, 100, i)).collect();
        assert_eq!(tx.tx(&regions, &pool, &pkts, &mut err).packets, 4);
        pool.free_bulk(&pkts);
        let mut hold = Vec::new();
        pool.alloc_bulk(&mut hold, 6); // 2 left
        let mut out = Vec::new();
        assert_eq!(
            rx.rx(&regions, &mut pool, &mut out, 64, &mut err).packets,
            2
        );
        assert_eq!(err.no_buffer, 1);
        pool.free_bulk(&hold);
        assert_eq!(
            rx.rx(&regions, &mut pool, &mut out, 64, &mut err).packets,
            2
        );
        pool.free_bulk(&out);
        assert_eq!(pool.in_use(), 0);
    }

    proptest::proptest! {
        #[test]
        fn hostile_ring_contents_never_panic_or_leak(data in proptest::collection::vec(proptest::num::u8::ANY, 0..6000)) {
            fuzz_rings(&data);
        }
    }

    #[test]
    fn fuzz_entry_handles_crafted_rings() {
        // Server side: head = 3 published, descriptors with wild offsets, a chain, an empty one.
        let mut d = vec![0u8; ring_bytes(4)];
        d[0] = 0; // server
        d[6] = 3; // head = 3
        let mut put = |i: usize, flags: u16, len: u32, off: u32| {
            let b = RING_HEADER_SIZE + i * DESC_SIZE;
            d[b..b + 2].copy_from_slice(&flags.to_le_bytes());
            d[b + 4..b + 8].copy_from_slice(&len.to_le_bytes());
            d[b + 8..b + 12].copy_from_slice(&off.to_le_bytes());
        };
        put(0, 1, 100, 0);
        put(1, 0, 100, 400);
        put(2, 0, 0xffff_ff00, 400);
        fuzz_rings(&d);
    }

    #[test]
    fn server_tx_refuses_peer_descriptor_outside_region() {
        let rb = ring_bytes(LOG2);
        let regions = vec![Region::anonymous(rb + 4096).unwrap()];
        let rr = RingRef::new(&regions, 0, 0, LOG2).unwrap();
        init_ring(&rr.ring(&regions));
        let mut client_rx = RxQueue::new(
            rr,
            Side::Client,
            Some(ClientBuffers {
                base: rb as u32,
                size: 256,
            }),
        );
        client_rx.refill(&regions);
        // A hostile client rewrites slot 1 to point past the region.
        rr.ring(&regions).set_desc(
            1,
            Desc {
                flags: 0,
                region: 0,
                length: 256,
                offset: (rb + 4000) as u32,
            },
        );
        let mut server_tx = TxQueue::new(rr, Side::Server, None);
        let mut pool = Pool::new(8);
        let pkts: Vec<u32> = (0..3).map(|i| packet(&mut pool, 60, i)).collect();
        let mut err = MemifErrors::default();
        let c = server_tx.tx(&regions, &pool, &pkts, &mut err);
        assert_eq!(c.packets, 1);
        assert_eq!(err.tx_bad_desc, 2, "both unsent frames counted");
        pool.free_bulk(&pkts);
    }
}
