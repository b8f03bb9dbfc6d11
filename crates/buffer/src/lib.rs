//! Packet buffers: a preallocated [`Pool`] of fixed-size buffers addressed by `u32` handles, and
//! [`Frame`]s (vectors) of up to [`FRAME_SIZE`] handles that travel through the graph.
//!
//! Every buffer has a fixed [`BufferHeader`] (typed metadata, size asserted at compile time) and a data
//! area of [`BUFFER_SIZE`] bytes whose first [`HEADROOM`] bytes are left free on receive so that nodes can
//! push VLAN tags or other headers in front of the packet without copying it.
//!
//! Frames larger than one buffer are chains: the first buffer's header carries the whole packet's length
//! in [`BufferHeader::total_len`], each buffer's [`BufferHeader::next`] names the next one.
//!
//! The pool needs no `unsafe`: buffers live in one boxed slice and are reached by index, so a handle can
//! never dangle; a stale handle is a logic error caught by the `free` bookkeeping.
//!
//! `unsafe` is denied crate-wide and allowed per item in two modules, for the big tables of the
//! crates that forbid it: [`prefetch::prefetch_read`], a safe software prefetch of a reference
//! for the staged table lookups, and [`huge`], table memory on 2 MiB transparent huge pages
//! (`mmap` + `madvise(MADV_HUGEPAGE)`) behind safe `Box<[T]>`-like owners (see their module docs).
#![deny(unsafe_code)]

pub mod huge;
#[allow(unsafe_code)]
pub mod prefetch;

use serde::{Deserialize, Serialize};

/// Bytes reserved in front of received data, for pushing headers (tags, encapsulations).
pub const HEADROOM: usize = 128;
/// Bytes of packet data one buffer can hold after the headroom.
pub const DATA_SIZE: usize = 2048;
/// Total bytes of one buffer (headroom + data).
pub const BUFFER_SIZE: usize = HEADROOM + DATA_SIZE;
/// Maximum number of packets in one frame (vector).
pub const FRAME_SIZE: usize = 256;
/// Handle value meaning "no buffer" (end of chain).
pub const NO_BUFFER: u32 = u32::MAX;

/// Typed per-buffer metadata. Fixed layout, fixed size; no untyped overlays.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferHeader {
    /// Offset of the first packet byte from the start of the buffer.
    pub data_offset: u16,
    /// Packet bytes in this buffer.
    pub len: u16,
    /// Whole packet length across the chain (valid on the first buffer).
    pub total_len: u32,
    /// Next buffer of a chained packet, or [`NO_BUFFER`].
    pub next: u32,
    /// Port index the packet was received on.
    pub rx_port: u16,
    /// Port index the packet should be sent on (set by forwarding nodes).
    pub tx_port: u16,
    /// Offset of the L3 header from `data_offset` (set by ethernet-input).
    pub l3_offset: u16,
    /// Bridge domain (or other service) index the packet belongs to.
    pub bd: u16,
    /// Outer VLAN id classified on input (0 = untagged).
    pub vlan: u16,
    /// [`flags`] bits.
    pub flags: u16,
    /// Receive timestamp in nanoseconds of a monotonic clock (0 = not stamped).
    pub rx_ns: u64,
    /// Trace record index while the packet is traced (see the graph's `trace add`).
    pub trace_id: u32,
    /// Flow hash (for link aggregation and load balancing), 0 = not computed.
    pub flow_hash: u32,
    /// Inner VLAN id of a double-tagged packet (0 = none).
    pub inner_vlan: u16,
    /// EtherType after the VLAN tags (set by ethernet-input).
    pub ethertype: u16,
    /// Spare room; keeps the header one cache line.
    pub reserved: [u32; 5],
}

/// Bits of [`BufferHeader::flags`].
pub mod flags {
    /// The buffer is on the free list (bookkeeping; never set on a live packet).
    pub const FREE: u16 = 1 << 0;
    /// The packet is being traced (`trace add N`).
    pub const TRACED: u16 = 1 << 1;
    /// The packet continues in `next`.
    pub const CHAINED: u16 = 1 << 2;
}

const _: () = assert!(core::mem::size_of::<BufferHeader>() == 64);

impl BufferHeader {
    const fn fresh() -> Self {
        BufferHeader {
            data_offset: HEADROOM as u16,
            len: 0,
            total_len: 0,
            next: NO_BUFFER,
            rx_port: 0,
            tx_port: 0,
            l3_offset: 0,
            bd: 0,
            vlan: 0,
            flags: 0,
            rx_ns: 0,
            trace_id: 0,
            flow_hash: 0,
            inner_vlan: 0,
            ethertype: 0,
            reserved: [0; 5],
        }
    }
}

/// Counts shown by `show buffers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    pub total: u32,
    pub free: u32,
    pub in_use: u32,
    pub buffer_size: u32,
    pub headroom: u32,
    /// `free` calls on a buffer that was already free (a bug somewhere; never a crash).
    pub double_frees: u64,
    /// Allocations refused because the pool was empty.
    pub alloc_failures: u64,
}

/// A preallocated pool of packet buffers.
#[derive(Debug)]
pub struct Pool {
    data: Box<[u8]>,
    headers: Box<[BufferHeader]>,
    free: Vec<u32>,
    double_frees: u64,
    alloc_failures: u64,
}

impl Pool {
    /// Creates a pool of `count` buffers, all free.
    pub fn new(count: u32) -> Pool {
        let n = count as usize;
        let mut headers = vec![BufferHeader::fresh(); n].into_boxed_slice();
        for h in headers.iter_mut() {
            h.flags = flags::FREE;
        }
        // Free list as a stack; handle 0 is handed out first.
        let free: Vec<u32> = (0..count).rev().collect();
        let mut data = vec![0u8; n * BUFFER_SIZE].into_boxed_slice();
        // Fault every page in now, as DPDK does with its mempools at start-up: zeroed memory from
        // the allocator is mapped lazily, and a buffer's first use would take the page fault on
        // the data path (docs/BENCHMARKS.md §14). `black_box` keeps the store of a zero onto
        // memory known to be zero from being optimised away.
        for i in (0..data.len()).step_by(4096) {
            data[i] = std::hint::black_box(0);
        }
        Pool {
            data,
            headers,
            free,
            double_frees: 0,
            alloc_failures: 0,
        }
    }

    /// Number of buffers in the pool.
    pub fn capacity(&self) -> u32 {
        self.headers.len() as u32
    }

    /// Number of free buffers.
    pub fn free_count(&self) -> u32 {
        self.free.len() as u32
    }

    /// Number of buffers handed out and not yet freed.
    pub fn in_use(&self) -> u32 {
        self.capacity() - self.free_count()
    }

    /// Counts for `show buffers`.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            total: self.capacity(),
            free: self.free_count(),
            in_use: self.in_use(),
            buffer_size: BUFFER_SIZE as u32,
            headroom: HEADROOM as u32,
            double_frees: self.double_frees,
            alloc_failures: self.alloc_failures,
        }
    }

    /// Allocates one buffer with a fresh header (empty, data at the headroom).
    pub fn alloc(&mut self) -> Option<u32> {
        match self.free.pop() {
            Some(h) => {
                self.headers[h as usize] = BufferHeader::fresh();
                Some(h)
            }
            None => {
                self.alloc_failures += 1;
                None
            }
        }
    }

    /// Allocates up to `n` buffers, appending their handles to `out`; returns how many it got.
    pub fn alloc_bulk(&mut self, out: &mut Vec<u32>, n: usize) -> usize {
        let got = n.min(self.free.len());
        if got < n {
            self.alloc_failures += 1;
        }
        let start = self.free.len() - got;
        for &h in &self.free[start..] {
            self.headers[h as usize] = BufferHeader::fresh();
        }
        out.extend(self.free.drain(start..).rev());
        got
    }

    /// Returns a packet (its whole chain) to the pool.
    pub fn free(&mut self, handle: u32) {
        let mut h = handle;
        while h != NO_BUFFER {
            let Some(hdr) = self.headers.get_mut(h as usize) else {
                self.double_frees += 1;
                return;
            };
            if hdr.flags & flags::FREE != 0 {
                self.double_frees += 1;
                debug_assert!(false, "double free of buffer {h}");
                return;
            }
            let next = if hdr.flags & flags::CHAINED != 0 {
                hdr.next
            } else {
                NO_BUFFER
            };
            hdr.flags = flags::FREE;
            hdr.next = NO_BUFFER;
            self.free.push(h);
            h = next;
        }
    }

    /// Returns many packets to the pool.
    pub fn free_bulk(&mut self, handles: &[u32]) {
        for &h in handles {
            self.free(h);
        }
    }

    /// The header of a buffer.
    #[inline]
    pub fn header(&self, h: u32) -> &BufferHeader {
        &self.headers[h as usize]
    }

    /// The header of a buffer, writable.
    #[inline]
    pub fn header_mut(&mut self, h: u32) -> &mut BufferHeader {
        &mut self.headers[h as usize]
    }

    #[inline]
    fn range(&self, h: u32) -> core::ops::Range<usize> {
        let hdr = &self.headers[h as usize];
        let base = h as usize * BUFFER_SIZE;
        let start = base + hdr.data_offset as usize;
        start..start + hdr.len as usize
    }

    /// The packet bytes held in this buffer (the first segment of a chain).
    #[inline]
    pub fn data(&self, h: u32) -> &[u8] {
        &self.data[self.range(h)]
    }

    /// The packet bytes held in this buffer, writable.
    #[inline]
    pub fn data_mut(&mut self, h: u32) -> &mut [u8] {
        let r = self.range(h);
        &mut self.data[r]
    }

    /// Header and bytes of one buffer at once.
    #[inline]
    pub fn packet_mut(&mut self, h: u32) -> (&mut BufferHeader, &mut [u8]) {
        let r = self.range(h);
        (&mut self.headers[h as usize], &mut self.data[r])
    }

    /// The whole buffer area (headroom included), for receive paths that write a packet in place.
    #[inline]
    pub fn raw_mut(&mut self, h: u32) -> &mut [u8] {
        let base = h as usize * BUFFER_SIZE;
        &mut self.data[base..base + BUFFER_SIZE]
    }

    /// Sets a single-buffer packet's contents to `bytes` (at the headroom). Returns false if it does not
    /// fit in one buffer.
    pub fn write_packet(&mut self, h: u32, bytes: &[u8]) -> bool {
        if bytes.len() > DATA_SIZE {
            return false;
        }
        let base = h as usize * BUFFER_SIZE + HEADROOM;
        self.data[base..base + bytes.len()].copy_from_slice(bytes);
        let hdr = &mut self.headers[h as usize];
        hdr.data_offset = HEADROOM as u16;
        hdr.len = bytes.len() as u16;
        hdr.total_len = bytes.len() as u32;
        true
    }

    /// Sets the length of the data in this buffer (after writing it through [`Pool::raw_mut`] at
    /// `data_offset`). Returns false, changing nothing, if it would run past the buffer's end.
    pub fn set_len(&mut self, h: u32, len: usize) -> bool {
        let hdr = &mut self.headers[h as usize];
        if hdr.data_offset as usize + len > BUFFER_SIZE {
            return false;
        }
        hdr.len = len as u16;
        if hdr.flags & flags::CHAINED == 0 {
            hdr.total_len = len as u32;
        }
        true
    }

    /// Makes room for `n` more bytes in front of the packet (from the headroom) and returns the whole,
    /// longer packet. `None`, changing nothing, if the headroom is too small.
    pub fn push_front(&mut self, h: u32, n: usize) -> Option<&mut [u8]> {
        let hdr = &mut self.headers[h as usize];
        if (hdr.data_offset as usize) < n {
            return None;
        }
        hdr.data_offset -= n as u16;
        hdr.len += n as u16;
        hdr.total_len += n as u32;
        Some(self.data_mut(h))
    }

    /// Removes `n` bytes from the front of the packet. False, changing nothing, if the packet's first
    /// buffer is shorter than `n`.
    pub fn pull_front(&mut self, h: u32, n: usize) -> bool {
        let hdr = &mut self.headers[h as usize];
        if (hdr.len as usize) < n {
            return false;
        }
        hdr.data_offset += n as u16;
        hdr.len -= n as u16;
        hdr.total_len -= n as u32;
        true
    }

    /// Allocates a buffer and copies a whole packet (all segments, header fields) into it; the copy
    /// is chained again if it is longer than one buffer. Used for flooding.
    pub fn clone_packet(&mut self, h: u32) -> Option<u32> {
        let first = self.alloc()?;
        let mut meta = *self.header(h);
        meta.flags &= !flags::CHAINED;
        let mut src = h;
        let mut dst = first;
        loop {
            let src_hdr = *self.header(src);
            let len = src_hdr.len as usize;
            let s = self.range(src).start;
            let d = dst as usize * BUFFER_SIZE + HEADROOM.min(src_hdr.data_offset as usize);
            self.data.copy_within(s..s + len, d);
            let dh = self.header_mut(dst);
            if src == h {
                *dh = meta;
            }
            dh.data_offset = HEADROOM.min(src_hdr.data_offset as usize) as u16;
            dh.len = len as u16;
            dh.next = NO_BUFFER;
            if src_hdr.flags & flags::CHAINED == 0 || src_hdr.next == NO_BUFFER {
                return Some(first);
            }
            let Some(n) = self.alloc() else {
                self.free(first);
                return None;
            };
            let dh = self.header_mut(dst);
            dh.next = n;
            dh.flags |= flags::CHAINED;
            src = src_hdr.next;
            dst = n;
        }
    }

    /// Appends `bytes` as the data of a new buffer chained after the last buffer of packet `h`.
    /// Used by receive paths for packets longer than one buffer. False if the pool is empty or
    /// `bytes` is longer than [`DATA_SIZE`] (nothing changed then).
    pub fn append_segment(&mut self, h: u32, bytes: &[u8]) -> bool {
        if bytes.len() > DATA_SIZE {
            return false;
        }
        let Some(n) = self.alloc() else { return false };
        self.write_packet(n, bytes);
        let mut last = h;
        while self.header(last).flags & flags::CHAINED != 0 && self.header(last).next != NO_BUFFER {
            last = self.header(last).next;
        }
        let lh = self.header_mut(last);
        lh.next = n;
        lh.flags |= flags::CHAINED;
        self.header_mut(h).total_len += bytes.len() as u32;
        true
    }

    /// Iterates over the segments of a (possibly chained) packet.
    pub fn segments(&self, h: u32) -> Segments<'_> {
        Segments {
            pool: self,
            next: h,
        }
    }

    /// Copies a whole packet (all segments) into `out` (cleared first). For slow paths and tests.
    pub fn copy_out(&self, h: u32, out: &mut Vec<u8>) {
        out.clear();
        for seg in self.segments(h) {
            out.extend_from_slice(seg);
        }
    }
}

/// Iterator over the byte segments of a chained packet.
#[derive(Debug)]
pub struct Segments<'a> {
    pool: &'a Pool,
    next: u32,
}

impl<'a> Iterator for Segments<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.next == NO_BUFFER {
            return None;
        }
        let h = self.next;
        let hdr = self.pool.header(h);
        self.next = if hdr.flags & flags::CHAINED != 0 {
            hdr.next
        } else {
            NO_BUFFER
        };
        Some(self.pool.data(h))
    }
}

/// A vector of up to [`FRAME_SIZE`] buffer handles.
#[derive(Clone)]
pub struct Frame {
    handles: [u32; FRAME_SIZE],
    len: usize,
}

impl core::fmt::Debug for Frame {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            handles: [NO_BUFFER; FRAME_SIZE],
            len: 0,
        }
    }
}

impl Frame {
    pub fn new() -> Frame {
        Frame::default()
    }
    /// Adds a handle; false if the frame is full.
    #[inline]
    pub fn push(&mut self, h: u32) -> bool {
        if self.len == FRAME_SIZE {
            return false;
        }
        self.handles[self.len] = h;
        self.len += 1;
        true
    }
    #[inline]
    pub fn as_slice(&self) -> &[u32] {
        &self.handles[..self.len]
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == FRAME_SIZE
    }
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_roundtrip_returns_to_zero_in_use() {
        let mut p = Pool::new(16);
        let mut v = Vec::new();
        assert_eq!(p.alloc_bulk(&mut v, 10), 10);
        assert_eq!(p.in_use(), 10);
        p.free_bulk(&v);
        assert_eq!(p.in_use(), 0);
        assert_eq!(p.stats().double_frees, 0);
    }

    #[test]
    fn exhaustion_is_counted_not_fatal() {
        let mut p = Pool::new(2);
        let mut v = Vec::new();
        assert_eq!(p.alloc_bulk(&mut v, 5), 2);
        assert_eq!(p.alloc(), None);
        assert!(p.stats().alloc_failures >= 2);
        p.free_bulk(&v);
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn push_and_pull_use_headroom() {
        let mut p = Pool::new(1);
        let h = p.alloc().unwrap();
        assert!(p.write_packet(h, &[1, 2, 3, 4]));
        let d = p.push_front(h, 4).unwrap();
        d[..4].copy_from_slice(&[9, 9, 9, 9]);
        assert_eq!(p.data(h), &[9, 9, 9, 9, 1, 2, 3, 4]);
        assert_eq!(p.header(h).total_len, 8);
        assert!(p.pull_front(h, 4));
        assert_eq!(p.data(h), &[1, 2, 3, 4]);
        assert!(p.push_front(h, HEADROOM + 1).is_none());
        assert!(!p.pull_front(h, 5));
        assert_eq!(p.data(h), &[1, 2, 3, 4]);
    }

    #[test]
    fn chained_packets_clone_copy_and_free_whole() {
        let mut p = Pool::new(8);
        let h = p.alloc().unwrap();
        let a = vec![0xaa; DATA_SIZE];
        let b = vec![0xbb; 100];
        assert!(p.write_packet(h, &a));
        assert!(p.append_segment(h, &b));
        assert_eq!(p.header(h).total_len as usize, DATA_SIZE + 100);
        assert_eq!(p.in_use(), 2);
        let c = p.clone_packet(h).unwrap();
        assert_eq!(p.in_use(), 4);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        p.copy_out(h, &mut x);
        p.copy_out(c, &mut y);
        assert_eq!(x, y);
        assert_eq!(x.len(), DATA_SIZE + 100);
        p.free(h);
        p.free(c);
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn double_free_is_counted_in_release() {
        let mut p = Pool::new(2);
        let h = p.alloc().unwrap();
        p.free(h);
        if !cfg!(debug_assertions) {
            p.free(h);
            assert_eq!(p.stats().double_frees, 1);
        }
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn frame_holds_at_most_frame_size() {
        let mut f = Frame::new();
        for i in 0..FRAME_SIZE as u32 {
            assert!(f.push(i));
        }
        assert!(!f.push(7));
        assert!(f.is_full());
        assert_eq!(f.as_slice().len(), FRAME_SIZE);
    }
}
