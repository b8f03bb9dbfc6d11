//! The data path: split virtqueues (virtio 1.1 §2.6) between guest memory and the [`Pool`].
//!
//! Guest memory is only touched through vm-memory's `Bytes` methods (`read_slice`,
//! `write_slice`, `write_obj`, `load`/`store` with an ordering), which copy with volatile
//! accesses and check every address against the memory table: a descriptor that points outside
//! the guest's memory is an error on that packet, never a wild read. Descriptor chains are walked
//! by `virtio-queue` (loop and length limits, indirect tables).
//!
//! Used elements are written by us, not by `Queue::add_used`, so that a whole burst becomes
//! visible to the driver with **one** release store of `used.idx` — a frame spread over several
//! receive buffers (MRG_RXBUF) must appear at once: DPDK's virtio PMD drops a frame whose
//! `num_buffers` entries are not all in the used ring yet ("No enough segments for packet").
//! The interrupt decision (virtio 1.1 §2.6.7.2, §2.6.10) is ours too, since it depends on where
//! the burst started: with EVENT_IDX we signal when `used_event` lies in the range just published;
//! without it, unless the driver set VRING_AVAIL_F_NO_INTERRUPT.

use super::device::{Device, Vring, RXQ, TXQ, VIRTIO_NET_F_MRG_RXBUF, VIRTIO_RING_F_EVENT_IDX};
use super::VhostUserErrors;
use crate::PortStats;
use std::io::Write;
use std::sync::atomic::Ordering;
use vecswitch_buffer::{flags, Pool, DATA_SIZE, HEADROOM, NO_BUFFER};
use virtio_queue::{QueueOwnedT, QueueT};
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

/// virtio 1.1 §2.6.6: the driver does not want interrupts (no EVENT_IDX).
const VRING_AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Longest frame we accept from the driver (64 KiB, the largest GSO-less virtio-net frame).
const MAX_FRAME: usize = 65535;

/// Scratch space reused across bursts (no allocation per packet).
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// (head index, bytes written) of the used elements of the current burst.
    used: Vec<(u16, u32)>,
    /// (guest address, length) of the buffers gathered for one outgoing frame.
    spans: Vec<(GuestAddress, u32)>,
    /// (head index, number of spans) per chain gathered for one outgoing frame.
    chains: Vec<(u16, usize)>,
}

/// Writes `used` to the used ring after `next_used`, publishes them with one release store of
/// `used.idx`, and interrupts the driver if it asked for it.
fn publish(vr: &mut Vring, mem: &GuestMemoryMmap, used: &[(u16, u32)], event_idx: bool) {
    if used.is_empty() {
        return;
    }
    let q = &mut vr.queue;
    let (size, ring, avail) = (q.size(), q.used_ring(), q.avail_ring());
    let old = q.next_used();
    let mut idx = old;
    for &(id, len) in used {
        // virtio 1.1 §2.6.8: struct virtq_used_elem { le32 id; le32 len; } after flags and idx.
        let elem = ring + 4 + 8 * u64::from(idx % size);
        let _ = mem.write_obj(u32::from(id).to_le(), GuestAddress(elem));
        let _ = mem.write_obj(len.to_le(), GuestAddress(elem + 4));
        idx = idx.wrapping_add(1);
    }
    let _ = mem.store(idx.to_le(), GuestAddress(ring + 2), Ordering::Release);
    q.set_next_used(idx);
    std::sync::atomic::fence(Ordering::SeqCst);
    let notify = if event_idx {
        // §2.6.10: used_event sits after the avail ring's entries.
        let at = GuestAddress(avail + 4 + 2 * u64::from(size));
        let used_event = u16::from_le(mem.load::<u16>(at, Ordering::Acquire).unwrap_or(0));
        let since = vr.signalled_used.unwrap_or(old);
        // vring_need_event(): the event index lies in (since, idx].
        idx.wrapping_sub(used_event).wrapping_sub(1) < idx.wrapping_sub(since)
    } else {
        let f = mem.load::<u16>(GuestAddress(avail), Ordering::Acquire);
        u16::from_le(f.unwrap_or(0)) & VRING_AVAIL_F_NO_INTERRUPT == 0
    };
    if notify {
        vr.signalled_used = Some(idx);
        if let Some(call) = vr.call.as_mut() {
            // An eventfd adds the 8-byte value to its counter; EAGAIN (counter full) means a
            // wake-up is already pending.
            let _ = call.write(&1u64.to_ne_bytes());
        }
    }
}

/// Driver → device (virtio-net transmit queue): up to `max` frames into new Pool packets.
pub(super) fn receive(
    dev: &mut Device,
    pool: &mut Pool,
    out: &mut Vec<u32>,
    max: usize,
    scratch: &mut Scratch,
    stats: &mut PortStats,
    errors: &mut VhostUserErrors,
) -> usize {
    let hdr_len = dev.net_hdr_len();
    let event_idx = dev.has(VIRTIO_RING_F_EVENT_IDX);
    let Some(mem) = dev.mem.as_ref() else {
        return 0;
    };
    let vr = &mut dev.vrings[TXQ];
    scratch.used.clear();
    let mut n = 0;
    while n < max && pool.free_count() > 0 {
        let Some(chain) = vr.queue.pop_descriptor_chain(mem) else {
            break;
        };
        let head = chain.head_index();
        scratch.used.push((head, 0));
        let first = pool.alloc().expect("free_count() > 0");
        match copy_in(mem, chain, hdr_len, pool, first) {
            Ok(len) => {
                stats.rx_packets += 1;
                stats.rx_bytes += len as u64;
                out.push(first);
                n += 1;
            }
            Err(e) => {
                pool.free(first);
                stats.rx_dropped += 1;
                match e {
                    CopyError::NoBuffer => errors.rx_no_buffer += 1,
                    CopyError::BadDescriptor => errors.rx_bad_descriptor += 1,
                    CopyError::Oversize => errors.rx_oversize += 1,
                    CopyError::Runt => errors.rx_runt += 1,
                }
            }
        }
    }
    publish(vr, mem, &scratch.used, event_idx);
    n
}

enum CopyError {
    NoBuffer,
    BadDescriptor,
    Oversize,
    Runt,
}

/// Copies one transmit chain (header + frame, readable descriptors only) into the Pool packet
/// `first`, chaining Pool buffers when the frame is longer than one. Returns the frame length.
fn copy_in<M: std::ops::Deref<Target = GuestMemoryMmap>>(
    mem: &GuestMemoryMmap,
    chain: virtio_queue::DescriptorChain<M>,
    hdr_len: usize,
    pool: &mut Pool,
    first: u32,
) -> Result<usize, CopyError> {
    let mut skip = hdr_len;
    let mut total = 0usize;
    let mut cur = first;
    let mut filled = 0usize;
    {
        let h = pool.header_mut(first);
        h.data_offset = HEADROOM as u16;
        h.next = NO_BUFFER;
        h.flags &= !flags::CHAINED;
    }
    for desc in chain {
        if desc.is_write_only() {
            return Err(CopyError::BadDescriptor);
        }
        let mut addr = desc.addr().0;
        let mut len = desc.len() as usize;
        let s = skip.min(len);
        skip -= s;
        addr += s as u64;
        len -= s;
        if total + len > MAX_FRAME {
            return Err(CopyError::Oversize);
        }
        while len > 0 {
            if filled == DATA_SIZE {
                let Some(next) = pool.alloc() else {
                    free_tail(pool, first);
                    return Err(CopyError::NoBuffer);
                };
                pool.set_len(cur, filled);
                let nh = pool.header_mut(next);
                nh.data_offset = HEADROOM as u16;
                nh.next = NO_BUFFER;
                nh.flags &= !flags::CHAINED;
                let ch = pool.header_mut(cur);
                ch.next = next;
                ch.flags |= flags::CHAINED;
                cur = next;
                filled = 0;
            }
            let k = len.min(DATA_SIZE - filled);
            let dst = &mut pool.raw_mut(cur)[HEADROOM + filled..HEADROOM + filled + k];
            if mem.read_slice(dst, GuestAddress(addr)).is_err() {
                free_tail(pool, first);
                return Err(CopyError::BadDescriptor);
            }
            filled += k;
            total += k;
            addr += k as u64;
            len -= k;
        }
    }
    if skip > 0 || total == 0 {
        free_tail(pool, first);
        return Err(CopyError::Runt);
    }
    pool.set_len(cur, filled);
    pool.header_mut(first).total_len = total as u32;
    Ok(total)
}

/// Frees the buffers chained after `first` (not `first` itself) and unchains it.
fn free_tail(pool: &mut Pool, first: u32) {
    let h = pool.header_mut(first);
    let mut next = if h.flags & flags::CHAINED != 0 {
        h.next
    } else {
        NO_BUFFER
    };
    h.flags &= !flags::CHAINED;
    h.next = NO_BUFFER;
    while next != NO_BUFFER {
        let nh = *pool.header(next);
        pool.free(next);
        next = if nh.flags & flags::CHAINED != 0 {
            nh.next
        } else {
            NO_BUFFER
        };
    }
}

/// Device → driver (virtio-net receive queue): copies `pkts` into the driver's buffers; returns
/// how many were delivered (the first ones; the rest found no room).
pub(super) fn transmit(
    dev: &mut Device,
    pool: &Pool,
    pkts: &[u32],
    scratch: &mut Scratch,
    stats: &mut PortStats,
    errors: &mut VhostUserErrors,
) -> usize {
    let hdr_len = dev.net_hdr_len();
    let mergeable = dev.has(VIRTIO_NET_F_MRG_RXBUF);
    let event_idx = dev.has(VIRTIO_RING_F_EVENT_IDX);
    let Some(mem) = dev.mem.as_ref() else {
        return 0;
    };
    let vr = &mut dev.vrings[RXQ];
    scratch.used.clear();
    let (mut sent, mut dropped) = (0, 0);
    'pkts: for &h in pkts {
        let frame_len = pool.header(h).total_len as usize;
        let need = hdr_len + frame_len;
        // Gather receive buffers until the header and frame fit (one chain without MRG_RXBUF).
        scratch.spans.clear();
        scratch.chains.clear();
        let mut room = 0usize;
        while room < need {
            if !mergeable && !scratch.chains.is_empty() {
                // §5.1.6.3.1: without MRG_RXBUF a frame must fit one chain; give the chain back.
                vr.queue.go_to_previous_position();
                errors.tx_too_big += 1;
                stats.tx_dropped += 1;
                dropped += 1;
                continue 'pkts;
            }
            let Some(chain) = vr.queue.pop_descriptor_chain(mem) else {
                for _ in 0..scratch.chains.len() {
                    vr.queue.go_to_previous_position();
                }
                errors.tx_ring_full += 1;
                break 'pkts;
            };
            let head = chain.head_index();
            let before = scratch.spans.len();
            for d in chain.writable() {
                room += d.len() as usize;
                scratch.spans.push((d.addr(), d.len()));
            }
            scratch.chains.push((head, scratch.spans.len() - before));
        }
        // The virtio-net header (§5.1.6): no offloads; num_buffers = chains used.
        let mut hdr = [0u8; 12];
        hdr[10..12].copy_from_slice(&(scratch.chains.len() as u16).to_le_bytes());
        let mut writer = SpanWriter::new(&scratch.spans);
        let mut ok = writer.write(mem, &hdr[..hdr_len]);
        for seg in pool.segments(h) {
            ok &= writer.write(mem, seg);
        }
        // Bytes written per chain, in the order the chains were taken.
        let mut left = need;
        let mut span = 0;
        for &(head, nspans) in &scratch.chains {
            let cap: usize = scratch.spans[span..span + nspans]
                .iter()
                .map(|s| s.1 as usize)
                .sum();
            let used = cap.min(left);
            left -= used;
            span += nspans;
            scratch.used.push((head, if ok { used as u32 } else { 0 }));
        }
        if ok {
            stats.tx_packets += 1;
            stats.tx_bytes += frame_len as u64;
            sent += 1;
        } else {
            // The chains are returned empty (len 0) so the driver can reuse them.
            errors.tx_bad_descriptor += 1;
            stats.tx_dropped += 1;
            dropped += 1;
        }
    }
    publish(vr, mem, &scratch.used, event_idx);
    // What the loop did not reach found the receive ring full.
    stats.tx_dropped += (pkts.len() - sent - dropped) as u64;
    sent
}

/// Writes a byte stream across a list of guest buffers.
struct SpanWriter<'a> {
    spans: &'a [(GuestAddress, u32)],
    i: usize,
    off: usize,
}

impl<'a> SpanWriter<'a> {
    fn new(spans: &'a [(GuestAddress, u32)]) -> Self {
        SpanWriter {
            spans,
            i: 0,
            off: 0,
        }
    }

    /// False if a buffer lies outside guest memory or the spans are too short.
    fn write(&mut self, mem: &GuestMemoryMmap, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            let Some(&(addr, len)) = self.spans.get(self.i) else {
                return false;
            };
            let k = bytes.len().min(len as usize - self.off);
            let Some(at) = addr.0.checked_add(self.off as u64) else {
                return false;
            };
            let at = GuestAddress(at);
            if mem.write_slice(&bytes[..k], at).is_err() {
                return false;
            }
            bytes = &bytes[k..];
            self.off += k;
            if self.off == len as usize {
                self.i += 1;
                self.off = 0;
            }
        }
        true
    }
}
