//! AF_PACKET port: any kernel network interface (veth, tap, a NIC) through one packet socket with
//! memory-mapped rings.
//!
//! - [`AfPacketConfig`] names the port and the interface, sizes the rings and picks the
//!   [`RxMode`]; [`AfPacketConfig::validate`] rejects bad values naming the field, the value and
//!   what is accepted.
//! - [`AfPacketPort`] implements [`Port`]. [`AfPacketPort::open`] opens an interface of the caller's
//!   network namespace, [`AfPacketPort::open_in_netns`] one inside another namespace (`ip netns`).
//! - [`AfPacketStats`] holds the backend's detailed counters (kernel drops, ignored outgoing frames,
//!   truncations, TX ring full, …) beside the generic [`PortStats`].
//!
//! ## Rings
//!
//! One socket carries two rings mapped with one `mmap`, RX first, then TX
//! (Documentation/networking/packet_mmap.rst). A socket has one `PACKET_VERSION` for both rings,
//! chosen by [`AfPacketConfig::rx_mode`]: TPACKET_V3 in block mode, TPACKET_V2 in
//! frame mode (the default). Block mode:
//!
//! - **RX: TPACKET_V3.** The kernel fills whole *blocks* of variable-length frames and hands a
//!   block over by setting `block_status` to `TP_STATUS_USER`; we walk its `tpacket3_hdr` chain
//!   (`tp_next_offset`), copy each frame into the [`Pool`] (chaining buffers for frames longer than
//!   one buffer, jumbo frames up to 9000 bytes and beyond) and give the block back by writing
//!   `TP_STATUS_KERNEL`. A partly filled block is retired after `block_timeout_ms`. Frames we sent
//!   ourselves come back on an AF_PACKET socket as `PACKET_OUTGOING`: `PACKET_IGNORE_OUTGOING`
//!   keeps them out of the ring (kernel >= 4.20) and the walk skips any that still arrive.
//!   The kernel strips the outer VLAN tag of every received frame into the descriptor
//!   (`skb_vlan_untag` runs before packet taps; `TP_STATUS_VLAN_VALID`, `tp_vlan_tci`,
//!   `tp_vlan_tpid`): the walk puts it back after the MAC addresses, so the switch sees tagged
//!   and Q-in-Q frames exactly as they were on the wire. Every descriptor offset and length is
//!   checked against its block before use ([`AfPacketStats::rx_bad_descriptor`]).
//! - **TX: TPACKET_V3 frame ring** (kernel >= 4.11). V3 TX is not block based: the kernel accepts
//!   a V3 TX ring only with fixed `frame_size` slots, each starting with a `tpacket3_hdr`, data at
//!   offset 48 (`TPACKET_ALIGN(sizeof(tpacket3_hdr))`). V3 because a socket has one
//!   `PACKET_VERSION` for both rings, and V3 is what the block RX side needs. A burst fills slots
//!   (`TP_STATUS_SEND_REQUEST`) and one `sendto(fd, NULL, 0, MSG_DONTWAIT)` asks the kernel to send
//!   them without waiting; slots come back as `TP_STATUS_AVAILABLE`. A frame longer than
//!   `frame_size - 48`, or than the kernel accepts for the MTU (MTU + 14 bytes, + 4 more for an
//!   802.1Q-tagged frame), is counted in `tx_dropped` and [`AfPacketStats::tx_too_long`], never
//!   handed to the kernel (which would drop it without a trace).
//!   `PACKET_LOSS` is set so that the kernel skips a malformed frame instead of stalling the ring.
//!
//! Frame mode (`rx_mode = frame`):
//!
//! - **RX: TPACKET_V2 frame ring.** `block_count` blocks of fixed slots; each slot starts with a
//!   `tpacket2_hdr` and its own `tp_status`, which the kernel sets to `TP_STATUS_USER` as soon as
//!   it has written the frame. We copy the frame out and give the slot back (`TP_STATUS_KERNEL`) at
//!   once. A frame must fit its slot after the 66-byte header area, so the slot is sized for the
//!   interface's MTU read at open: MTU + 84 rounded up to 16 (1584 at MTU 1500, 9088 at 9000), at
//!   most `frame_size` (use `frame_size = 16384` for 9000-byte frames, as TX needs anyway). A
//!   longer frame (the MTU raised after open, GRO/LRO-merged packets of a NIC) is cut by the
//!   kernel and counted in [`AfPacketStats::rx_truncated`]. VLAN tags are put back and outgoing frames skipped as in block mode; a descriptor
//!   whose frame does not lie inside its own slot is dropped ([`AfPacketStats::rx_bad_descriptor`]).
//! - **TX: TPACKET_V2 frame ring**, the same slots as in block mode but with a `tpacket2_hdr`:
//!   data at offset 32, so the largest frame sent is `frame_size - 32`.
//!
//! ## Receive modes and ring depth
//!
//! In block mode the kernel hands a block over only when it is full or when its retire timer
//! (`block_timeout_ms`, at least 1 ms) fires, so at any rate that does not fill a block every
//! received frame waits in a partly filled block: up to the timeout of latency that is the
//! port's own. And the ring's depth in *time* is what it can absorb while the reader is away
//! (descheduled, busy elsewhere): at a rate that does not fill a block within the timeout, each
//! block retires with whatever arrived, so the ring holds `block_count` timeouts — 8 ms with
//! the old default of 8 blocks of 1 MiB, and only `block_count` *frames* at rates below one frame
//! per timeout. When every block is waiting for user space the kernel freezes the queue and drops
//! (`tp_drops`, `tp_freeze_q_cnt`, both in [`AfPacketStats`] and `show errors`). In frame mode
//! each frame is ours as soon as the kernel wrote it and the ring holds a fixed number of frames
//! (`block_size / rx slot` per block) whatever the rate.
//!
//! So the default is frame mode on 128 blocks of 64 KiB (8 MiB per ring): 5,248 RX slots at MTU
//! 1500, i.e. 26 ms at 200 kfps and 262 ms at 20 kfps, with no timer latency; block mode on the
//! same geometry holds at least 128 ms (128 × 1 ms) at any rate and about 57,000 60-byte frames
//! at high rates. Measured latencies and losses of both modes, and how they were measured, are in
//! docs/BENCHMARKS.md ("AF_PACKET"); a generator measuring latency must use frame mode.
//!
//! ## TX: counted as sent when the kernel gives the slot back
//!
//! The TX ring (`tx::TxRing`) tracks the slots in flight. A frame counts in `tx_packets` only when its slot
//! comes back `TP_STATUS_AVAILABLE` (on veth inside the kick, on a NIC at transmit completion).
//! A kick that hits a full socket buffer (`EAGAIN`) or a qdisc that refuses a frame (`ENOBUFS`)
//! leaves the slots in `TP_STATUS_SEND_REQUEST` (the kernel puts a refused frame's slot back to
//! SEND_REQUEST and does not advance its head), and the next kick hands them over:
//! [`AfPacketPort::flush`] does that, and [`Port::poll_control`] calls it, which the switch's
//! worker does on every idle poll — so frames never wait in the ring because traffic stopped. A
//! full ring is kicked and reaped once before frames are dropped (`tx_ring_full`). A kick that
//! fails for good (interface down or gone) takes the waiting slots back and counts them in
//! `tx_dropped` and [`AfPacketStats::tx_unsent_dropped`]. The kernel sends the slots strictly in
//! order and puts a frame its driver dropped back to SEND_REQUEST (`tpacket_snd`), so a frame the
//! far side cannot take would be re-sent at every kick and hold every frame behind it: when a
//! kick finds the kernel's head where the previous refused kick left it, the port takes the
//! waiting slots back — at once if the interface has no carrier
//! ([`AfPacketStats::tx_link_down`]: a veth whose peer is down; the frames would otherwise go
//! out, stale, when the link returns), after `TX_STALL_LIMIT` (100 ms) of refusals otherwise
//! ([`AfPacketStats::tx_stalled_dropped`]: e.g. longer than a veth peer's MTU). `PACKET_QDISC_BYPASS` (default on)
//! sends straight to the driver: no qdisc can then drop a frame after the port counted it.
//!
//! ## Interface removed under the port
//!
//! A socket is bound to a device, not to a name. When the interface is deleted (`ip link del`, a
//! NIC unplugged, a container's veth gone) the kernel unbinds the socket (its bound ifindex becomes
//! -1) and the socket receives and sends nothing, even after an interface of the same name is created
//! again: that is a new device with a new ifindex. So [`Port::poll_control`] looks, at most every
//! 100 ms (`crate::ifwatch`), at both the socket's binding (`getsockname`) and what the name stands
//! for now (`SIOCGIFINDEX`, asked through the socket, so in the socket's own namespace):
//!
//! - the name resolves to nothing: the port is `down`, and `describe` (`show ports`) says why and
//!   since when (`down: interface veth0 removed (the socket was bound to ifindex 7) (for 2.3 s)`);
//! - the name resolves to another device (or the socket lost its binding): the port opens a new
//!   socket and new rings on it, in the namespace the port was opened in, and takes their place,
//!   keeping its counters (`interface-re-opened` in `show errors`, `re-opened N times` in
//!   `describe`). If that open fails, the port stays down with the error as its reason and tries
//!   again at the next look.
//!
//! [`Port::link`] is `down` whenever the socket is not bound to the device the name stands for, so
//! `show ports` never says `up` over a black hole, even in the 100 ms before the next look. Frames
//! the switch sends meanwhile fail their kick (`ENXIO`) and are counted (`tx-unsent-dropped`,
//! `tx-kick-errors`), as are frames still in the old TX ring when it is replaced; frames sent *to*
//! the missing interface never reach this host and cannot be counted here.
//!
//! ## Offloads: partial checksums and GSO from veth/tap
//!
//! A frame sent by the stack of a veth or tap peer can leave with its TCP/UDP checksum "offloaded"
//! (`CHECKSUM_PARTIAL`: only the pseudo-header sum in the field); the kernel flags it
//! `TP_STATUS_CSUMNOTREADY` on receive. The RX walks complete such a checksum in software as the
//! kernel's `skb_checksum_help` would (IPv4/IPv6, TCP/UDP, up to two VLAN tags;
//! [`AfPacketStats::rx_csum_completed`]); one they cannot parse is passed on as it is and counted
//! ([`AfPacketStats::rx_csum_incomplete`], in `show errors`). `PACKET_VNET_HDR` is not used, so
//! GSO super-frames (a TCP stream from a peer with TSO/GSO on, up to 64 KiB) are not segmented:
//! in frame mode the kernel cuts them to the slot ([`AfPacketStats::rx_truncated`]), in block mode
//! they exceed the MTU on transmit ([`AfPacketStats::tx_too_long`]) — counted, never forwarded
//! broken. Turn TSO/GSO off on such peers (`ethtool -K IF tso off gso off`); the lab's generator
//! sends no GSO frames, so the lab leaves the offloads of the veths it creates as they are.
//! `tests/afpacket_tcp.rs` carries a real kernel TCP connection (4 MiB, Python sockets) between
//! two namespaces through two cross-connected ports, TSO/GSO off and checksum offload on at the
//! peers: the bytes arrive intact (SHA-256), the receiver counts no TCP checksum error, and the
//! sending side's port completed checksums. Keep the port's interface free of IP addresses, or in
//! a namespace of its own: a kernel that owns the address a peer asks for answers its ARP on that
//! interface (weak host model) and the flow goes to the host instead of through the switch.
//!
//! ## Layout
//!
//! `config` ([`AfPacketConfig`], [`RxMode`], [`AfPacketError`]), `sys` (the kernel ABI),
//! `socket` (socket options, ioctls), `rx` (both RX walks), `tx` (the TX ring), `stats`
//! ([`AfPacketStats`]); this file opens the socket and implements [`Port`]. The mapping of both
//! rings is one [`crate::shm::ShmRegion`] (an `Arc` held by each ring): every read and write of
//! ring memory, status hand-overs included, goes through its bounds-checked volatile/atomic
//! accessors.
//!
//! The socket is non-blocking; [`AfPacketPort::raw_fd`] is readable (`POLLIN`) when an RX block
//! (frame mode: a frame) is ready, for an interrupt/adaptive mode with poll/epoll.
//!
//! ## Counters
//!
//! `rx_dropped` = kernel drops (`PACKET_STATISTICS` `tp_drops`: ring full) + truncated or
//! malformed descriptors + frames that found no pool buffer. Note that reading
//! `PACKET_STATISTICS` resets the kernel's copy, so the port accumulates it. `tx_dropped` = too
//! long + ring full + refused by the kernel + taken back after a failed kick. Every reason has its
//! own counter in [`AfPacketStats`], listed by [`Port::error_counters`] for `show errors`;
//! `describe` (the `show ports` backend column) adds the kernel drops, freezes and TX frames in
//! flight.
//!
//! `unsafe` here is limited to the socket calls (the ring accesses are in [`crate::shm`]); each
//! block says why it is sound.

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::Arc;

use vecswitch_buffer::Pool;

use crate::ifstats::{IfKernelStats, IfStatsReader};
use crate::ifwatch::{self, IfWatch, NetnsHandle};
use crate::shm::ShmRegion;
use crate::{LinkState, Port, PortStats};

mod config;
mod rx;
mod socket;
mod stats;
mod sys;
mod tx;

pub use config::{AfPacketConfig, AfPacketError, RxMode, RxModeError};
pub use stats::AfPacketStats;

/// Entry point for the fuzz targets in `crates/ports/fuzz` (not a stable API).
#[doc(hidden)]
pub use rx::fuzzing;

use rx::{rx_slot_size, FrameRing, Rx, RxRing};
use socket::{ifreq, os_err, setsockopt};
use tx::{TxLayout, TxRing};

/// Ethernet header: what a frame carries beyond the MTU.
const ETH_HLEN: usize = 14;
/// Destination and source MAC addresses, before the EtherType or the first VLAN tag.
const MAC_ADDRS: usize = 12;
/// One VLAN tag (TPID + TCI).
const VLAN_TAG: usize = 4;
/// The 802.1Q TPID.
const ETH_P_8021Q: u16 = 0x8100;

/// A port on a kernel interface through an AF_PACKET socket (see the module doc).
#[derive(Debug)]
pub struct AfPacketPort {
    config: AfPacketConfig,
    ifindex: i32,
    mtu: usize,
    block_size: usize,
    /// The rings hold the mapping (`Arc<ShmRegion>`); declared before `fd` so that it is unmapped
    /// before the socket closes.
    rx: Rx,
    tx: TxRing,
    stats: PortStats,
    extra: AfPacketStats,
    /// Kernel counters accumulated from `PACKET_STATISTICS` (which resets on each read).
    kernel_drops: Cell<u64>,
    kernel_freeze: Cell<u64>,
    /// Whether the interface is still the one the socket is bound to (see "Interface removed").
    watch: IfWatch,
    /// The namespace the socket lives in, where a re-created interface is re-opened.
    netns: NetnsHandle,
    /// The interface's own kernel counters ([`crate::ifstats`]): the reader (none if the kernel
    /// refused a netlink socket), the reading at open or at the last `clear_stats`, and what the
    /// interfaces this port had before it re-opened itself carried.
    ifstats: Option<IfStatsReader>,
    if_base: Cell<IfKernelStats>,
    if_retired: IfKernelStats,
    /// Last: closed after the rings are unmapped.
    fd: OwnedFd,
}

impl AfPacketPort {
    /// Opens `config.interface` in the caller's network namespace.
    pub fn open(config: AfPacketConfig) -> Result<AfPacketPort, AfPacketError> {
        config.validate()?;
        let c = &config;
        let ifname = CString::new(c.interface.clone()).expect("validated: no NUL");
        // SAFETY: `ifname` is a valid NUL-terminated string that lives across the call.
        let ifindex = unsafe { libc::if_nametoindex(ifname.as_ptr()) };
        if ifindex == 0 {
            return Err(AfPacketError::NoSuchInterface {
                port: c.name.clone(),
                interface: c.interface.clone(),
            });
        }
        let ifindex = ifindex as i32;

        // Protocol 0: the socket receives nothing until `bind` names the interface, so no frame of
        // another interface slips into the ring meanwhile.
        // SAFETY: plain syscall with constant arguments.
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if raw < 0 {
            return Err(os_err(c, "socket(AF_PACKET)"));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let f = fd.as_raw_fd();

        // One version for both rings: V3 (blocks) or V2 (frame slots), see the module doc.
        match c.rx_mode {
            RxMode::Block => setsockopt(f, sys::SOL_PACKET, sys::PACKET_VERSION, &sys::TPACKET_V3)
                .map_err(|_| os_err(c, "setsockopt(PACKET_VERSION=TPACKET_V3)"))?,
            RxMode::Frame => setsockopt(f, sys::SOL_PACKET, sys::PACKET_VERSION, &sys::TPACKET_V2)
                .map_err(|_| os_err(c, "setsockopt(PACKET_VERSION=TPACKET_V2)"))?,
        }
        if c.qdisc_bypass {
            setsockopt(f, sys::SOL_PACKET, sys::PACKET_QDISC_BYPASS, &1i32)
                .map_err(|_| os_err(c, "setsockopt(PACKET_QDISC_BYPASS)"))?;
        }
        setsockopt(f, sys::SOL_PACKET, sys::PACKET_LOSS, &1i32)
            .map_err(|_| os_err(c, "setsockopt(PACKET_LOSS)"))?;
        // Let the whole TX ring be in flight at once: the socket send buffer (default ~200 KiB)
        // otherwise stops a kick early (EAGAIN). Best effort: FORCE needs CAP_NET_ADMIN, the plain
        // option is capped by net.core.wmem_max.
        let sndbuf =
            i32::try_from(c.block_size as usize * c.block_count as usize).unwrap_or(i32::MAX);
        if setsockopt(f, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf).is_err() {
            let _ = setsockopt(f, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf);
        }
        // Best effort: older kernels lack it, and the RX walk filters PACKET_OUTGOING anyway.
        let _ = setsockopt(f, sys::SOL_PACKET, sys::PACKET_IGNORE_OUTGOING, &1i32);

        let mtu = ifreq(f, &c.interface, libc::SIOCGIFMTU as libc::c_ulong)
            .map(|d| d as usize)
            .unwrap_or(1500);
        let rx_slot = rx_slot_size(c.frame_size, mtu);
        let frames_per_block = c.block_size / c.frame_size;
        let rx_req = sys::TpacketReq3 {
            block_size: c.block_size,
            block_nr: c.block_count,
            frame_size: c.frame_size,
            frame_nr: frames_per_block * c.block_count,
            retire_blk_tov: c.block_timeout_ms,
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        match c.rx_mode {
            RxMode::Block => {
                setsockopt(f, sys::SOL_PACKET, sys::PACKET_RX_RING, &rx_req)
                    .map_err(|_| os_err(c, "setsockopt(PACKET_RX_RING)"))?;
                // The kernel takes a V3 TX ring only without the block-retire fields.
                let tx_req = sys::TpacketReq3 {
                    retire_blk_tov: 0,
                    ..rx_req
                };
                setsockopt(f, sys::SOL_PACKET, sys::PACKET_TX_RING, &tx_req)
                    .map_err(|_| os_err(c, "setsockopt(PACKET_TX_RING)"))?;
            }
            RxMode::Frame => {
                // The same blocks for both rings; RX slots sized for the MTU, TX slots frame_size.
                let rx = sys::TpacketReq {
                    block_size: c.block_size,
                    block_nr: c.block_count,
                    frame_size: rx_slot,
                    frame_nr: (c.block_size / rx_slot) * c.block_count,
                };
                setsockopt(f, sys::SOL_PACKET, sys::PACKET_RX_RING, &rx)
                    .map_err(|_| os_err(c, "setsockopt(PACKET_RX_RING)"))?;
                let tx = sys::TpacketReq {
                    block_size: c.block_size,
                    block_nr: c.block_count,
                    frame_size: c.frame_size,
                    frame_nr: frames_per_block * c.block_count,
                };
                setsockopt(f, sys::SOL_PACKET, sys::PACKET_TX_RING, &tx)
                    .map_err(|_| os_err(c, "setsockopt(PACKET_TX_RING)"))?;
            }
        }

        let ring_bytes = c.block_size as usize * c.block_count as usize;
        let len = 2 * ring_bytes;
        // The socket's rings, RX then TX, each `ring_bytes` (packet_mmap.rst).
        let map = Arc::new(ShmRegion::map(f, len).map_err(|_| os_err(c, "mmap(rings)"))?);

        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { core::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = sys::ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: `sll` is a valid sockaddr_ll and the length is its size.
        let rc = unsafe {
            libc::bind(
                f,
                (&sll as *const libc::sockaddr_ll).cast(),
                core::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os_err(c, "bind"));
        }
        if c.promiscuous {
            let mreq = sys::PacketMreq {
                ifindex,
                kind: sys::PACKET_MR_PROMISC,
                ..Default::default()
            };
            setsockopt(f, sys::SOL_PACKET, sys::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(|_| os_err(c, "setsockopt(PACKET_ADD_MEMBERSHIP promisc)"))?;
        }
        if let Some(id) = c.fanout {
            let arg: u32 = u32::from(id) | (sys::PACKET_FANOUT_HASH << 16);
            setsockopt(f, sys::SOL_PACKET, sys::PACKET_FANOUT, &arg)
                .map_err(|_| os_err(c, "setsockopt(PACKET_FANOUT)"))?;
        }

        let port = AfPacketPort {
            ifindex,
            mtu,
            block_size: c.block_size as usize,
            rx: match c.rx_mode {
                // The mapping starts with the RX ring: block_count blocks of block_size bytes.
                RxMode::Block => Rx::Block(RxRing::new(
                    Arc::clone(&map),
                    0,
                    c.block_size as usize,
                    c.block_count as usize,
                )),
                // The kernel laid out block_size / rx_slot slots of rx_slot bytes (a multiple of
                // 16 in 128..=frame_size <= block_size) in each block.
                RxMode::Frame => Rx::Frame(FrameRing::new(
                    Arc::clone(&map),
                    0,
                    c.block_size as usize,
                    rx_slot as usize,
                    ((c.block_size / rx_slot) * c.block_count) as usize,
                )),
            },
            // The TX ring follows the RX ring: block_count blocks of block_size bytes, each
            // holding frames_per_block slots of frame_size.
            tx: TxRing::new(
                map,
                ring_bytes,
                c.block_size as usize,
                c.frame_size as usize,
                (frames_per_block * c.block_count) as usize,
                TxLayout::of(c.rx_mode),
            ),
            fd,
            stats: PortStats::default(),
            extra: AfPacketStats::default(),
            kernel_drops: Cell::new(0),
            kernel_freeze: Cell::new(0),
            watch: IfWatch::default(),
            netns: NetnsHandle::current(),
            ifstats: IfStatsReader::open()
                .map_err(|e| tracing::warn!(port = %c.name, "no interface counters (netlink): {e}"))
                .ok(),
            if_base: Cell::new(IfKernelStats::default()),
            if_retired: IfKernelStats::default(),
            config,
        };
        port.if_base.set(port.read_if().unwrap_or_default());
        Ok(port)
    }

    /// Opens `config.interface` inside the network namespace at `netns` (a path such as
    /// `/run/netns/NAME`, or `/proc/PID/ns/net`). The socket stays in that namespace; the port is
    /// used from any thread like any other. Entering the namespace happens on a short-lived thread,
    /// so the caller's thread keeps its own namespace.
    pub fn open_in_netns(
        config: AfPacketConfig,
        netns: &str,
    ) -> Result<AfPacketPort, AfPacketError> {
        config.validate()?;
        let netns = netns.to_string();
        std::thread::scope(|s| {
            s.spawn(move || {
                let ns_err = |source| AfPacketError::Netns {
                    port: config.name.clone(),
                    netns: netns.clone(),
                    source,
                };
                let file = std::fs::File::open(&netns).map_err(ns_err)?;
                // SAFETY: `file` is an open namespace descriptor; setns only changes this
                // short-lived thread's network namespace.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(ns_err(io::Error::last_os_error()));
                }
                AfPacketPort::open(config)
            })
            .join()
            .expect("open_in_netns thread does not panic")
        })
    }

    /// The socket, for poll/epoll: readable when an RX block (frame mode: a frame) is ready.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Waits up to `timeout` for an RX block to become ready (`poll(POLLIN)` on the socket); for
    /// interrupt or adaptive mode, where a worker sleeps instead of spinning on an idle port.
    /// Returns whether the port is readable; an interrupted wait returns `Ok(false)`.
    pub fn wait_readable(&self, timeout: std::time::Duration) -> io::Result<bool> {
        crate::fd::wait_readable(self.fd.as_raw_fd(), timeout)
    }

    /// The configuration the port was opened with.
    pub fn config(&self) -> &AfPacketConfig {
        &self.config
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    /// The interface MTU read when the port was opened.
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// The backend's detailed counters.
    pub fn af_packet_stats(&self) -> AfPacketStats {
        self.poll_kernel_stats();
        let i = self.if_stats();
        AfPacketStats {
            kernel_drops: self.kernel_drops.get(),
            kernel_freeze_q: self.kernel_freeze.get(),
            tx_in_flight: self.tx.in_flight() as u64,
            reopened: self.watch.reopened,
            kernel_if_tx_dropped: i.tx_dropped,
            kernel_peer_tx_dropped: i.peer_tx_dropped,
            ..self.extra
        }
    }

    /// The interface's kernel counters since the last `clear_stats`, over this interface and the
    /// ones the port had before (what they had when it left them if the reading fails now).
    fn if_stats(&self) -> IfKernelStats {
        self.read_if().map_or(self.if_retired, |now| {
            now.since(&self.if_base.get(), &self.if_retired)
        })
    }

    /// The interface's kernel counters now.
    fn read_if(&self) -> Option<IfKernelStats> {
        self.ifstats.as_ref()?.read(self.ifindex as u32).ok()
    }

    /// Reads (and thereby resets) the kernel's counters and adds them to ours.
    fn poll_kernel_stats(&self) {
        let mut st = sys::TpacketStatsV3::default();
        let mut len = core::mem::size_of::<sys::TpacketStatsV3>() as libc::socklen_t;
        // SAFETY: `st` is writable for `len` bytes, `len` is a valid in/out length.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                sys::SOL_PACKET,
                sys::PACKET_STATISTICS,
                (&mut st as *mut sys::TpacketStatsV3).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            self.kernel_drops
                .set(self.kernel_drops.get() + u64::from(st.drops));
            self.kernel_freeze
                .set(self.kernel_freeze.get() + u64::from(st.freeze_q_cnt));
        }
    }

    /// `ioctl(SIOCGIF*)` on our interface, returning the first 4 bytes of the union as i32.
    fn ifreq(&self, request: libc::c_ulong) -> Option<i32> {
        ifreq(self.fd.as_raw_fd(), &self.config.interface, request)
    }

    /// The ifindex the socket is bound to now (`getsockname`): the kernel sets it to -1 when the
    /// device is unregistered (`packet_notifier`, NETDEV_UNREGISTER), and the socket then receives
    /// and sends nothing, whatever later takes the device's name.
    fn bound_ifindex(&self) -> Option<i32> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { core::mem::zeroed() };
        let mut len = core::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `sll` is writable for `len` bytes and `len` is a valid in/out length.
        let rc = unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                (&mut sll as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(sll.sll_ifindex)
    }

    /// Looks whether the interface is still the device the socket is bound to (see "Interface
    /// removed" in the module doc): gone → down with the reason; there under a new ifindex (or the
    /// socket unbound) → re-opened on it.
    fn check_interface(&mut self) {
        let bound = self.bound_ifindex() == Some(self.ifindex);
        let now = self.ifreq(libc::SIOCGIFINDEX as libc::c_ulong);
        if let Some(now) = self
            .watch
            .look(&self.config.interface, self.ifindex, now, bound)
        {
            ifwatch::reopen(self, now);
        }
    }

    /// Asks the kernel to send the slots waiting in SEND_REQUEST (`sendto(fd, NULL, 0,
    /// MSG_DONTWAIT)`, packet_mmap.rst). `Ok(true)` when the kernel took them all or will take
    /// the rest at the next kick (EAGAIN: socket buffer full; ENOBUFS: the qdisc refused one; both
    /// leave the slots in SEND_REQUEST); `Err` on a hard error (interface down or gone: ENXIO,
    /// ENETDOWN, …), where the kernel took none.
    fn kick(&mut self) -> io::Result<()> {
        // SAFETY: sendto with a NULL buffer of length 0 on our packet socket: the documented way to
        // ask the kernel to send the TX ring's pending slots; nothing is read from user memory.
        let rc = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                ptr::null(),
                0,
            )
        };
        if rc >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {
                self.extra.tx_deferred_kicks += 1;
                Ok(())
            }
            _ => Err(e),
        }
    }

    /// Hands every frame waiting in the TX ring to the kernel and counts those it gave back as
    /// sent. Returns the frames still in flight (in a qdisc or a NIC's queue, or refused for now:
    /// the next `flush`, `tx_burst` or idle `poll_control` tries again). A kick that fails for good
    /// (interface down or gone) takes the waiting frames back and counts them as dropped
    /// ([`AfPacketStats::tx_unsent_dropped`]). Never blocks.
    pub fn flush(&mut self) -> usize {
        self.tx.complete(&mut self.stats, &mut self.extra);
        self.flush_pending();
        self.tx.in_flight()
    }

    /// Kicks if some slot waits, then takes back what the kernel finished; returns the frames
    /// taken back unsent after a hard kick error.
    fn flush_pending(&mut self) -> usize {
        if !self.tx.has_unsent() {
            return 0;
        }
        let kicked = self.kick();
        self.tx.complete(&mut self.stats, &mut self.extra);
        let reclaimed = if kicked.is_err() {
            self.extra.tx_kick_errors += 1;
            let n = self.tx.reclaim_unsent();
            self.extra.tx_unsent_dropped += n as u64;
            n
        } else {
            // The same frame refused again, nothing sent since: with no carrier it will not go
            // until the link returns, so give up now; with the link up, after TX_STALL_LIMIT.
            // The link is read (two syscalls) only here, never while the ring moves.
            match self.tx.head_stalled() {
                Some(_) if self.link() == LinkState::Down => {
                    let n = self.tx.reclaim_unsent();
                    self.extra.tx_link_down += n as u64;
                    n
                }
                Some(waited) if waited >= tx::TX_STALL_LIMIT => {
                    let n = self.tx.reclaim_unsent();
                    self.extra.tx_stalled_dropped += n as u64;
                    n
                }
                _ => 0,
            }
        };
        self.stats.tx_dropped += reclaimed as u64;
        reclaimed
    }
}

/// Re-opening on a re-created interface (see "Interface removed under the port"): a new socket
/// and rings; frames still in the old TX ring are handed over once more, and those not given back
/// are counted as dropped ([`AfPacketStats::tx_unsent_dropped`]).
impl ifwatch::Reopen for AfPacketPort {
    type Config = AfPacketConfig;
    type Error = AfPacketError;
    fn config_for_reopen(&self) -> AfPacketConfig {
        self.config.clone()
    }
    fn open_for_reopen(config: AfPacketConfig) -> Result<AfPacketPort, AfPacketError> {
        AfPacketPort::open(config)
    }
    fn watched(&mut self) -> (&mut IfWatch, &mut NetnsHandle, &str) {
        (&mut self.watch, &mut self.netns, &self.config.interface)
    }
    fn hand_over(&mut self, new: &mut AfPacketPort) {
        self.poll_kernel_stats();
        self.flush();
        let lost = self.tx.in_flight() as u64;
        self.extra.tx_unsent_dropped += lost;
        self.stats.tx_dropped += lost;
        new.stats = self.stats;
        new.extra = self.extra;
        new.kernel_drops.set(self.kernel_drops.get());
        new.kernel_freeze.set(self.kernel_freeze.get());
        new.if_retired = self.if_stats();
    }
}

impl Port for AfPacketPort {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        match &mut self.rx {
            Rx::Block(r) => r.burst(pool, out, max, &mut self.stats, &mut self.extra),
            Rx::Frame(r) => r.burst(pool, out, max, &mut self.stats, &mut self.extra),
        }
    }

    /// Places each packet in a TX slot and kicks once at the end (and once more mid-burst if the
    /// ring fills). Returns the frames placed; they count as sent (`tx_packets`) when the kernel
    /// gives their slots back, which on veth happens inside the kick, on a NIC at transmit
    /// completion. Frames that are too long or find the ring full after a kick are counted in
    /// `tx_dropped`; frames taken back after a hard kick error are not returned as placed.
    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        self.tx.complete(&mut self.stats, &mut self.extra);
        let slot_max = self.config.max_tx_frame();
        let mut placed = 0;
        for (i, &h) in pkts.iter().enumerate() {
            let len = pool.header(h).total_len as usize;
            // The kernel sends MTU + 14 bytes, 4 more when the frame carries an 802.1Q tag
            // (packet_extra_vlan_len_allowed); anything longer it would drop silently.
            let d = pool.data(h);
            let q_tagged =
                d.len() >= ETH_HLEN && d[MAC_ADDRS..ETH_HLEN] == ETH_P_8021Q.to_be_bytes();
            let mtu_max = self.mtu + ETH_HLEN + if q_tagged { VLAN_TAG } else { 0 };
            if len > slot_max || len > mtu_max || len == 0 {
                self.extra.tx_too_long += 1;
                self.stats.tx_dropped += 1;
                continue;
            }
            if self.tx.is_full() {
                // Hand over what waits and take back what the kernel finished, then retry once.
                let reclaimed = self.flush_pending();
                placed -= reclaimed.min(placed);
            }
            if !self.tx.place(pool, h, len) {
                let left = (pkts.len() - i) as u64;
                self.extra.tx_ring_full += left;
                self.stats.tx_dropped += left;
                break;
            }
            placed += 1;
        }
        let reclaimed = self.flush_pending();
        placed - reclaimed.min(placed)
    }

    /// Housekeeping, called by the worker on every idle poll: reads the kernel's RX counters and
    /// flushes the TX ring ([`AfPacketPort::flush`]), so that no frame stays in the ring because
    /// traffic stopped after a kick that could not hand it over.
    fn poll_control(&mut self) {
        self.poll_kernel_stats();
        if self.watch.due() {
            self.check_interface();
        }
        self.flush();
    }

    fn stats(&self) -> PortStats {
        self.poll_kernel_stats();
        let mut s = self.stats;
        s.rx_dropped += self.kernel_drops.get();
        // Frames the interface dropped after the socket let them go (crate::ifstats): given back
        // by the kernel as sent, never sent.
        // The interface's own and its peer's `tx_dropped` count dropped copies, not this port's
        // losses (AfPacketStats::kernel_if_tx_dropped, kernel_peer_tx_dropped): not added.
        s
    }

    fn rx_ring(&self) -> Option<crate::RingFill> {
        let (size, fill) = match &self.rx {
            Rx::Block(r) => (r.block_count, r.fill),
            Rx::Frame(r) => (r.frame_count, r.fill),
        };
        Some(crate::RingFill {
            size: u32::try_from(size).unwrap_or(u32::MAX),
            peak: fill.peak,
            last: fill.last,
            full_polls: fill.full_polls,
        })
    }

    fn clear_stats(&mut self) {
        self.poll_kernel_stats();
        match &mut self.rx {
            Rx::Block(r) => r.fill = Default::default(),
            Rx::Frame(r) => r.fill = Default::default(),
        }
        self.stats = PortStats::default();
        self.extra = AfPacketStats::default();
        self.watch.reopened = 0;
        self.kernel_drops.set(0);
        self.kernel_freeze.set(0);
        self.if_base.set(self.read_if().unwrap_or_default());
        self.if_retired = IfKernelStats::default();
    }

    /// Down while the interface is gone or the socket is no longer bound to the device the name
    /// now stands for (a re-created interface not re-opened yet), else the interface's
    /// `IFF_UP | IFF_RUNNING`.
    fn link(&self) -> LinkState {
        if self.watch.is_down() || self.bound_ifindex() != Some(self.ifindex) {
            return LinkState::Down;
        }
        match self.ifreq(libc::SIOCGIFFLAGS as libc::c_ulong) {
            Some(flags) if flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0 => {
                LinkState::Up
            }
            _ => LinkState::Down,
        }
    }

    /// The backend, its rings, and the kernel's RX counters (drops, freezes) and the TX frames
    /// in flight, so that `show ports` shows where frames are.
    fn describe(&self) -> String {
        let x = self.af_packet_stats();
        format!(
            "af_packet {} ifindex {} mtu {} {} tx {} slots of {}{}{}; kernel drops {} freezes {}, tx in flight {}, interface tx_dropped {}, peer tx_dropped {}{}",
            self.config.interface,
            self.ifindex,
            self.mtu,
            match &self.rx {
                Rx::Block(r) => format!(
                    "tpacket_v3 rx_mode block rx {}x{} timeout {} ms",
                    r.block_count, self.block_size, self.config.block_timeout_ms
                ),
                Rx::Frame(r) => format!(
                    "tpacket_v2 rx_mode frame rx {} slots of {}",
                    r.frame_count, r.frame_size
                ),
            },
            self.tx.slots(),
            self.config.frame_size,
            if self.config.qdisc_bypass {
                " qdisc_bypass"
            } else {
                ""
            },
            if self.config.fanout.is_some() {
                " fanout"
            } else {
                ""
            },
            x.kernel_drops,
            x.kernel_freeze_q,
            x.tx_in_flight,
            x.kernel_if_tx_dropped,
            x.kernel_peer_tx_dropped,
            self.watch.describe(),
        )
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.af_packet_stats().reasons().to_vec()
    }
}
