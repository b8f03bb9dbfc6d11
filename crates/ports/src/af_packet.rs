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
//! chosen by [`AfPacketConfig::rx_mode`]: TPACKET_V3 in block mode (the default), TPACKET_V2 in
//! frame mode. Block mode:
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
//!   `PACKET_LOSS` is set so that the kernel skips a frame it refuses instead of stalling the ring.
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
//! ## Receive modes: block batches for throughput, frame for latency
//!
//! In block mode the kernel hands a block over only when it is full or when its retire timer
//! (`block_timeout_ms`, at least 1 ms) fires, so at any rate that does not fill a block (a 1 MiB
//! block holds ~10 000 60-byte frames) every received frame waits in a partly filled block. That
//! wait is the receiver's own latency, not the device under test's: a tester measuring latency
//! must use frame mode, where a frame is visible to `rx_burst` as soon as the kernel wrote it.
//!
//! Measured on the 2-core lab VM (kernel 6.18, shared with other builds, so tails are noisy),
//! one-way over a veth pair, 60-byte frames, both ends in the same mode, one thread sending on
//! schedule and busy-polling the receiver; ranges over three runs of
//! `cargo run --release -p vecswitch-ports --example afp_latency -- latency MODE RATE COUNT`
//! (COUNT 500 / 3000 / 20000 / 100000):
//!
//! | rate | mode | min | median | p99 |
//! |---|---|---|---|---|
//! | 100 pps | block | 32–273 µs | 43–907 µs | 0.9–4.3 ms |
//! | 100 pps | frame | 4.2–4.7 µs | 12–44 µs | 49–78 µs |
//! | 1 kpps | block | 43–138 µs | 133–894 µs | 0.7–4.3 ms |
//! | 1 kpps | frame | 2.7–2.9 µs | 4.6–5.5 µs | 17–44 µs |
//! | 10 kpps | block | 2.9–5.4 µs | 406–556 µs | 1.0–4.7 ms |
//! | 10 kpps | frame | 2.7–2.8 µs | 3.0–3.5 µs | 5–14 µs |
//! | 100 kpps | block | 4.4–4.6 µs | 504–536 µs | 1.0 ms |
//! | 100 kpps | frame | 2.6–2.8 µs | 2.9–3.5 µs | 4.0–4.6 µs |
//!
//! Through the lab's phy2phy-veth topology with the Linux bridge as DUT (testbed test
//! `gen_measurer_over_veth_through_the_linux_bridge`, debug build, 2 kfps): block-mode generator
//! ports measured min 84–261 µs, median 234–564 µs; frame mode min 34–43 µs, median 52–57 µs.
//!
//! Throughput (`... -- throughput MODE 3 60 FRAME_SIZE`: one sender thread as fast as the TX ring
//! goes, one receiver thread, three runs each): both modes received what this host could send
//! (85–215 kfps of 60-byte frames, the sender is the limit), frame mode with no kernel drops in
//! any run, block mode with 0.02–6 % (its receiver fell behind while descheduled). The user-space
//! cost per frame is about twice block mode's: `rx_burst` took 600–1000 ns per frame in frame
//! mode against 330–410 ns in block mode (both including per-burst timing, which frame mode's
//! smaller bursts amortise worse): one atomic status load and store per frame instead of per
//! block. A frame-mode ring also holds fewer frames: `block_size / rx slot` per block (5288 with
//! the default 8 MiB ring at MTU 1500). Block mode stays the default for the switch, where
//! throughput matters and the DUT's own latency is not measured by itself; the traffic
//! generator opens its ports in frame mode.
//!
//! The socket is non-blocking; [`AfPacketPort::raw_fd`] is readable (`POLLIN`) when an RX block
//! (frame mode: a frame) is ready, for an interrupt/adaptive mode with poll/epoll.
//!
//! ## Counters
//!
//! `rx_dropped` = kernel drops (`PACKET_STATISTICS` `tp_drops`: ring full) + truncated or
//! malformed descriptors + frames that found no pool buffer. Note that reading
//! `PACKET_STATISTICS` resets the kernel's copy, so the port accumulates it.
//!
//! `unsafe` here is limited to the socket calls and the accesses to the shared rings; each block
//! says why it is sound.

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use vecswitch_buffer::{Pool, DATA_SIZE, HEADROOM};

use crate::{LinkState, Port, PortStats};

/// Kernel ABI of `linux/if_packet.h` that the rings use, written out here so that the layout is
/// visible and checked at compile time.
mod sys {
    pub const SOL_PACKET: libc::c_int = 263;
    pub const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
    pub const PACKET_RX_RING: libc::c_int = 5;
    pub const PACKET_STATISTICS: libc::c_int = 6;
    pub const PACKET_VERSION: libc::c_int = 10;
    pub const PACKET_TX_RING: libc::c_int = 13;
    pub const PACKET_LOSS: libc::c_int = 14;
    pub const PACKET_FANOUT: libc::c_int = 18;
    pub const PACKET_QDISC_BYPASS: libc::c_int = 20;
    pub const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
    pub const PACKET_MR_PROMISC: libc::c_ushort = 1;
    pub const PACKET_FANOUT_HASH: u32 = 0;
    pub const TPACKET_V2: libc::c_int = 1;
    pub const TPACKET_V3: libc::c_int = 2;
    pub const PACKET_OUTGOING: u8 = 4;
    pub const ETH_P_ALL: u16 = 0x0003;

    pub const TP_STATUS_KERNEL: u32 = 0;
    pub const TP_STATUS_USER: u32 = 1;
    pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
    pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
    pub const TP_STATUS_AVAILABLE: u32 = 0;
    pub const TP_STATUS_SEND_REQUEST: u32 = 1;
    pub const TP_STATUS_SENDING: u32 = 2;
    pub const TP_STATUS_WRONG_FORMAT: u32 = 4;

    /// `struct tpacket_req3`.
    #[repr(C)]
    #[derive(Debug, Default, Clone, Copy)]
    pub struct TpacketReq3 {
        pub block_size: u32,
        pub block_nr: u32,
        pub frame_size: u32,
        pub frame_nr: u32,
        pub retire_blk_tov: u32,
        pub sizeof_priv: u32,
        pub feature_req_word: u32,
    }

    /// `struct tpacket_req` (TPACKET_V1/V2 rings).
    #[repr(C)]
    #[derive(Debug, Default, Clone, Copy)]
    pub struct TpacketReq {
        pub block_size: u32,
        pub block_nr: u32,
        pub frame_size: u32,
        pub frame_nr: u32,
    }

    /// `struct tpacket_stats_v3`.
    #[repr(C)]
    #[derive(Debug, Default, Clone, Copy)]
    pub struct TpacketStatsV3 {
        pub packets: u32,
        pub drops: u32,
        pub freeze_q_cnt: u32,
    }

    /// `struct packet_mreq`.
    #[repr(C)]
    #[derive(Debug, Default, Clone, Copy)]
    pub struct PacketMreq {
        pub ifindex: libc::c_int,
        pub kind: libc::c_ushort,
        pub alen: libc::c_ushort,
        pub address: [u8; 8],
    }

    /// `struct ifreq` with the union seen as bytes (we read `ifr_flags` and `ifr_mtu`, both at offset 0).
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct IfReq {
        pub name: [libc::c_char; 16],
        pub data: [u8; 24],
    }

    /// Byte offsets in `struct tpacket_block_desc` (version, offset_to_priv, then `tpacket_hdr_v1`).
    pub mod block {
        pub const STATUS: usize = 8;
        pub const NUM_PKTS: usize = 12;
        pub const OFFSET_TO_FIRST_PKT: usize = 16;
    }

    /// Byte offsets in `struct tpacket3_hdr` (48 bytes), followed by `struct sockaddr_ll`.
    pub mod hdr3 {
        pub const NEXT_OFFSET: usize = 0;
        pub const SNAPLEN: usize = 12;
        pub const LEN: usize = 16;
        pub const STATUS: usize = 20;
        pub const MAC: usize = 24;
        /// `hv1.tp_vlan_tci` (u32) and `hv1.tp_vlan_tpid` (u16).
        pub const VLAN_TCI: usize = 32;
        pub const VLAN_TPID: usize = 36;
        /// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where `sockaddr_ll` starts on RX, and where
        /// frame data starts in a TX slot.
        pub const SIZE: usize = 48;
        /// `sockaddr_ll.sll_pkttype`, from the start of `tpacket3_hdr`.
        pub const PKTTYPE: usize = SIZE + 10;
        /// Header plus `sockaddr_ll` (`TPACKET3_HDRLEN`).
        pub const HDRLEN: usize = SIZE + 20;
    }

    /// Byte offsets in `struct tpacket2_hdr` (32 bytes), followed by `struct sockaddr_ll`.
    pub mod hdr2 {
        pub const STATUS: usize = 0;
        pub const LEN: usize = 4;
        pub const SNAPLEN: usize = 8;
        pub const MAC: usize = 12;
        /// `tp_vlan_tci` (u16) and `tp_vlan_tpid` (u16).
        pub const VLAN_TCI: usize = 24;
        pub const VLAN_TPID: usize = 26;
        /// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where `sockaddr_ll` starts on RX, and
        /// where frame data starts in a TX slot.
        pub const SIZE: usize = 32;
        /// `sockaddr_ll.sll_pkttype`, from the start of `tpacket2_hdr`.
        pub const PKTTYPE: usize = SIZE + 10;
        /// Header plus `sockaddr_ll` (`TPACKET2_HDRLEN`).
        pub const HDRLEN: usize = SIZE + 20;
    }

    const _: () = assert!(core::mem::size_of::<TpacketReq3>() == 28);
    const _: () = assert!(core::mem::size_of::<TpacketReq>() == 16);
    const _: () = assert!(core::mem::size_of::<TpacketStatsV3>() == 12);
    const _: () = assert!(core::mem::size_of::<PacketMreq>() == 16);
    const _: () = assert!(core::mem::size_of::<IfReq>() == 40);
}

/// Page size the ring geometry must respect.
const PAGE_SIZE: u32 = 4096;
/// Largest ring the config accepts (per direction), to catch typos before they pin gigabytes.
const MAX_RING_BYTES: u64 = 1 << 30;
/// Ethernet header: what a frame carries beyond the MTU.
const ETH_HLEN: usize = 14;
/// Destination and source MAC addresses, before the EtherType or the first VLAN tag.
const MAC_ADDRS: usize = 12;
/// One VLAN tag (TPID + TCI).
const VLAN_TAG: usize = 4;
/// The 802.1Q TPID.
const ETH_P_8021Q: u16 = 0x8100;

/// How the RX ring hands received frames to user space (see the module doc, "Receive modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum RxMode {
    /// TPACKET_V3 blocks: the kernel hands over a block when it is full or after
    /// `block_timeout_ms`. Batches for throughput; a frame may wait up to the timeout.
    #[default]
    Block,
    /// TPACKET_V2 frame slots: each frame is ours as soon as the kernel has written it.
    /// For latency measurements; both rings of the socket are then TPACKET_V2.
    Frame,
}

/// A string that is not an [`RxMode`]; names the field, the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("rx_mode = {0:?} is not accepted; expected \"block\" or \"frame\"")]
pub struct RxModeError(pub String);

impl std::str::FromStr for RxMode {
    type Err = RxModeError;
    fn from_str(s: &str) -> Result<RxMode, RxModeError> {
        match s {
            "block" => Ok(RxMode::Block),
            "frame" => Ok(RxMode::Frame),
            _ => Err(RxModeError(s.to_string())),
        }
    }
}

impl TryFrom<String> for RxMode {
    type Error = RxModeError;
    fn try_from(s: String) -> Result<RxMode, RxModeError> {
        s.parse()
    }
}

/// Configuration of an AF_PACKET port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AfPacketConfig {
    /// The port's name in the switch (`show ports`).
    pub name: String,
    /// Kernel interface to open (`eth0`, `veth1`), at most 15 bytes.
    pub interface: String,
    /// Bytes per ring block: a power of two, at least 4096 (one page). The largest frame received
    /// whole is about `block_size - 128`.
    pub block_size: u32,
    /// Blocks per ring (RX and TX each have this many), at least 1.
    pub block_count: u32,
    /// Bytes per TX slot (and, in frame mode, per RX slot): a multiple of 16, from 128 to
    /// `block_size`; the largest frame sent is `frame_size - 48` (frame mode: `- 32`), the largest
    /// received in frame mode `frame_size - 66` (RX slots are sized for the MTU, at most
    /// `frame_size`). Use 16384 for 9000-byte jumbo frames.
    pub frame_size: u32,
    /// How long (ms) the kernel keeps a partly filled RX block before handing it over, 1..=1000
    /// (block mode only).
    pub block_timeout_ms: u32,
    /// Send without the interface's qdisc (`PACKET_QDISC_BYPASS`), like a NIC driver.
    pub qdisc_bypass: bool,
    /// Put the interface in promiscuous mode while the port is open.
    pub promiscuous: bool,
    /// Join fanout group `id` (hash mode) so that several sockets share the interface's traffic.
    pub fanout: Option<u16>,
    /// `block` (TPACKET_V3, batched) or `frame` (TPACKET_V2, each frame visible at once).
    pub rx_mode: RxMode,
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            name: String::new(),
            interface: String::new(),
            block_size: 1 << 20,
            block_count: 8,
            frame_size: 2048,
            block_timeout_ms: 1,
            qdisc_bypass: false,
            promiscuous: true,
            fanout: None,
            rx_mode: RxMode::Block,
        }
    }
}

impl AfPacketConfig {
    /// Defaults for port `name` on `interface`: 8 blocks of 1 MiB per ring, 2048-byte TX slots
    /// (frames up to 2000 bytes), 1 ms block timeout, promiscuous, no qdisc bypass, no fanout,
    /// block receive mode.
    pub fn new(name: &str, interface: &str) -> AfPacketConfig {
        AfPacketConfig {
            name: name.to_string(),
            interface: interface.to_string(),
            ..Default::default()
        }
    }

    /// The largest frame the TX ring can carry: `frame_size - 48` in block mode (TPACKET_V3
    /// slots), `frame_size - 32` in frame mode (TPACKET_V2 slots).
    pub fn max_tx_frame(&self) -> usize {
        (self.frame_size as usize).saturating_sub(TxLayout::of(self.rx_mode).data)
    }

    /// Checks every field; the error names the first bad one, its value and what is accepted.
    pub fn validate(&self) -> Result<(), AfPacketError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AfPacketError::Config {
                port: self.name.clone(),
                field,
                value,
                accepted,
            })
        };
        if self.name.is_empty() {
            return bad("name", format!("{:?}", self.name), "a non-empty port name");
        }
        if self.interface.is_empty()
            || self.interface.len() > 15
            || self.interface.contains(['/', '\0', ' '])
        {
            return bad(
                "interface",
                format!("{:?}", self.interface),
                "a kernel interface name of 1 to 15 bytes without '/', spaces or NUL",
            );
        }
        if self.block_size < PAGE_SIZE || !self.block_size.is_power_of_two() {
            return bad(
                "block_size",
                self.block_size.to_string(),
                "a power of two >= 4096 (one page)",
            );
        }
        if self.block_count == 0 {
            return bad("block_count", self.block_count.to_string(), "at least 1");
        }
        if u64::from(self.block_size) * u64::from(self.block_count) > MAX_RING_BYTES {
            return bad(
                "block_count",
                self.block_count.to_string(),
                "block_size * block_count <= 1 GiB per ring",
            );
        }
        if self.frame_size < 128 || self.frame_size & 15 != 0 || self.frame_size > self.block_size {
            return bad(
                "frame_size",
                self.frame_size.to_string(),
                "a multiple of 16 from 128 to block_size",
            );
        }
        if self.block_timeout_ms == 0 || self.block_timeout_ms > 1000 {
            return bad(
                "block_timeout_ms",
                self.block_timeout_ms.to_string(),
                "1 to 1000 milliseconds",
            );
        }
        Ok(())
    }
}

/// Errors opening an AF_PACKET port.
#[derive(Debug, Error)]
pub enum AfPacketError {
    #[error("af_packet port {port:?}: {field} = {value} is not accepted; expected {accepted}")]
    Config {
        port: String,
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error(
        "af_packet port {port:?}: interface {interface:?} does not exist in this network namespace"
    )]
    NoSuchInterface { port: String, interface: String },
    #[error("af_packet port {port:?}: cannot open network namespace {netns:?}")]
    Netns {
        port: String,
        netns: String,
        #[source]
        source: io::Error,
    },
    #[error("af_packet port {port:?} on {interface:?}: {step} failed (needs CAP_NET_RAW; kernel >= 4.20)")]
    Syscall {
        port: String,
        interface: String,
        step: &'static str,
        #[source]
        source: io::Error,
    },
}

/// Counters specific to the AF_PACKET backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AfPacketStats {
    /// Frames the kernel dropped because the RX ring was full (`tp_drops`).
    pub kernel_drops: u64,
    /// Times the kernel froze the RX queue because no block was free (`tp_freeze_q_cnt`; block
    /// mode only, always 0 in frame mode).
    pub kernel_freeze_q: u64,
    /// Our own transmitted frames seen on RX (`PACKET_OUTGOING`) and skipped.
    pub rx_outgoing_ignored: u64,
    /// Frames the kernel stored shorter than they were (`tp_snaplen < tp_len`): dropped.
    pub rx_truncated: u64,
    /// Descriptors whose offsets or lengths fall outside their block: the rest of the block is dropped.
    pub rx_bad_descriptor: u64,
    /// Frames that found no free pool buffer: dropped.
    pub rx_no_buffer: u64,
    /// Frames not sent because every TX slot was still in use.
    pub tx_ring_full: u64,
    /// Frames not sent because they are longer than a TX slot or than the MTU allows.
    pub tx_too_long: u64,
    /// Frames the kernel refused to send (`TP_STATUS_WRONG_FORMAT`).
    pub tx_kernel_rejected: u64,
    /// `sendto` kicks that failed with something other than "try again".
    pub tx_kick_errors: u64,
}

/// A memory-mapped region shared with the kernel.
#[derive(Debug)]
struct Mapping {
    base: *mut u8,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what a successful mmap returned, unmapped once here; no
        // pointer into the mapping outlives the port that owns it.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// The RX ring: `block_count` TPACKET_V3 blocks of `block_size` bytes, and where reading stands.
#[derive(Debug)]
struct RxRing {
    base: *mut u8,
    block_size: usize,
    block_count: usize,
    /// The block being read, packets of it already consumed, and the offset of the next one.
    block: usize,
    done: u32,
    offset: usize,
}

/// Loads a status word (acquire: the data the kernel wrote before handing over is then visible).
///
/// # Safety
///
/// `p` must point at a 4-byte aligned `u32` inside a live ring, a word that is only ever accessed
/// atomically (block and slot status words are: the kernel and we hand ownership over through them).
#[inline]
unsafe fn load_status(p: *mut u8) -> u32 {
    // SAFETY: guaranteed by the caller (see above).
    unsafe { AtomicU32::from_ptr(p.cast()) }.load(Ordering::Acquire)
}

/// Stores a status word (release: our writes to the block or slot happen before the hand-over).
///
/// # Safety
///
/// As for [`load_status`].
#[inline]
unsafe fn store_status(p: *mut u8, v: u32) {
    // SAFETY: guaranteed by the caller (see above).
    unsafe { AtomicU32::from_ptr(p.cast()) }.store(v, Ordering::Release)
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

/// Copies the `len` bytes at `src` into a new pool packet (chained when longer than one buffer),
/// putting `tag` back after the two MAC addresses when the kernel took the outer VLAN tag off.
/// `None` if the pool is empty.
///
/// # Safety
///
/// `src..src + len` must be readable and not written by anyone (the kernel included) during the
/// call: a ring block or slot that is user-owned (status `TP_STATUS_USER`).
unsafe fn copy_in(
    pool: &mut Pool,
    src: *const u8,
    len: usize,
    tag: Option<[u8; 4]>,
) -> Option<u32> {
    // A tag goes after the MAC addresses; a frame too short to have them keeps no tag.
    let tag = tag.filter(|_| len >= MAC_ADDRS);
    let total = len + if tag.is_some() { VLAN_TAG } else { 0 };
    let h = pool.alloc()?;
    let first = total.min(DATA_SIZE);
    let dst = &mut pool.raw_mut(h)[HEADROOM..HEADROOM + first];
    let mut done = match tag {
        None => {
            // SAFETY: `src..src+len` is readable and stable (caller); `dst` is process-private
            // pool memory of `first <= len` bytes.
            unsafe { ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), first) };
            first
        }
        Some(t) => {
            let rest = first - MAC_ADDRS - VLAN_TAG;
            // SAFETY: as above; `first` = min(len + 4, DATA_SIZE) >= 16, and 12 + rest <= len
            // source bytes are read.
            unsafe {
                ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), MAC_ADDRS);
                ptr::copy_nonoverlapping(
                    src.add(MAC_ADDRS),
                    dst.as_mut_ptr().add(MAC_ADDRS + VLAN_TAG),
                    rest,
                );
            }
            dst[MAC_ADDRS..MAC_ADDRS + VLAN_TAG].copy_from_slice(&t);
            MAC_ADDRS + rest
        }
    };
    pool.set_len(h, first);
    while done < len {
        let n = (len - done).min(DATA_SIZE);
        // SAFETY: bytes inside `src..src+len` (caller), not written meanwhile; the slice lives
        // only for this call.
        let seg = unsafe { core::slice::from_raw_parts(src.add(done), n) };
        if !pool.append_segment(h, seg) {
            pool.free(h);
            return None;
        }
        done += n;
    }
    Some(h)
}

impl RxRing {
    /// # Safety
    ///
    /// `base` must be 16-byte aligned and valid for reads and writes of `block_size * block_count`
    /// bytes for as long as the ring is used, shared only with the kernel's packet socket (or, in
    /// tests, with nobody). `block_size` must be a multiple of 16.
    unsafe fn new(base: *mut u8, block_size: usize, block_count: usize) -> RxRing {
        RxRing {
            base,
            block_size,
            block_count,
            block: 0,
            done: 0,
            offset: 0,
        }
    }

    /// Address of byte `off` of the current block, if `len` bytes from there lie inside the block
    /// and `off` is a multiple of `align` (a power of two).
    #[inline]
    fn at(&self, off: usize, len: usize, align: usize) -> Option<*mut u8> {
        let end = off.checked_add(len)?;
        (end <= self.block_size && off & (align - 1) == 0)
            .then(|| self.base.wrapping_add(self.block * self.block_size + off))
    }

    /// The `u32` at `off` of the current block; 0 if it is not an aligned field inside the block.
    #[inline]
    fn u32_at(&self, off: usize) -> u32 {
        match self.at(off, 4, 4) {
            // SAFETY: inside the ring (checked by `at`, ring size from `new`'s contract), 4-aligned
            // (blocks are 16-aligned); read only while the block is ours (status USER), volatile
            // because the memory is shared with the kernel.
            Some(p) => unsafe { ptr::read_volatile(p.cast::<u32>()) },
            None => 0,
        }
    }

    /// The `u16` at `off` of the current block; 0 if it is not an aligned field inside the block.
    #[inline]
    fn u16_at(&self, off: usize) -> u16 {
        match self.at(off, 2, 2) {
            // SAFETY: as in `u32_at`, 2 bytes, 2-aligned.
            Some(p) => unsafe { ptr::read_volatile(p.cast::<u16>()) },
            None => 0,
        }
    }

    /// The byte at `off` of the current block; 0 if outside it.
    #[inline]
    fn u8_at(&self, off: usize) -> u8 {
        match self.at(off, 1, 1) {
            // SAFETY: as in `u32_at`, one byte.
            Some(p) => unsafe { ptr::read_volatile(p) },
            None => 0,
        }
    }

    /// The current block's status word.
    #[inline]
    fn status(&self) -> u32 {
        let p = self
            .base
            .wrapping_add(self.block * self.block_size + sys::block::STATUS);
        // SAFETY: block < block_count and STATUS + 4 <= 16 <= block_size: inside the ring; 4-aligned;
        // the block status word is only accessed atomically, by us and by the kernel.
        unsafe { load_status(p) }
    }

    /// Returns the current block to the kernel and moves to the next one.
    fn release_block(&mut self) {
        let p = self
            .base
            .wrapping_add(self.block * self.block_size + sys::block::STATUS);
        // SAFETY: as in `status`.
        unsafe { store_status(p, sys::TP_STATUS_KERNEL) };
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
        let src = self.at(off, len, 1)?;
        // SAFETY: `src..src+len` is inside the current block (checked by `at`), which the kernel
        // does not write while its status is TP_STATUS_USER (we only read blocks in that state).
        unsafe { copy_in(pool, src, len, tag) }
    }

    /// Moves up to `max` frames from ready blocks into `pool`, appending handles to `out`.
    /// Descriptors are bounds-checked against their block before use: a bad one drops the rest of
    /// its block (counted once in `rx_bad_descriptor`), never reads outside the ring.
    fn burst(
        &mut self,
        pool: &mut Pool,
        out: &mut Vec<u32>,
        max: usize,
        stats: &mut PortStats,
        extra: &mut AfPacketStats,
    ) -> usize {
        let mut got = 0;
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
                if self.at(off, sys::hdr3::HDRLEN, 4).is_none() {
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
                if self.at(off + mac, snaplen, 1).is_none() || (next == 0 && self.done < num) {
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
struct FrameRing {
    base: *mut u8,
    block_size: usize,
    frame_size: usize,
    frames_per_block: usize,
    frame_count: usize,
    next: usize,
}

impl FrameRing {
    /// # Safety
    ///
    /// `base` must be 16-byte aligned and valid for reads and writes of
    /// `block_size * (frame_count / frames_per_block)` bytes for as long as the ring is used,
    /// shared only with the kernel's packet socket (or, in tests, with nobody);
    /// `frames_per_block * frame_size <= block_size`, `frame_size` a multiple of 16 and at least
    /// `sys::hdr2::HDRLEN`, `frame_count` a non-zero multiple of `frames_per_block`.
    unsafe fn new(
        base: *mut u8,
        block_size: usize,
        frame_size: usize,
        frame_count: usize,
    ) -> FrameRing {
        FrameRing {
            base,
            block_size,
            frame_size,
            frames_per_block: block_size / frame_size,
            frame_count,
            next: 0,
        }
    }

    /// Start of slot `i` (< frame_count).
    #[inline]
    fn slot(&self, i: usize) -> *mut u8 {
        let block = i / self.frames_per_block;
        let within = i % self.frames_per_block;
        self.base
            .wrapping_add(block * self.block_size + within * self.frame_size)
    }

    /// Moves up to `max` frames from user-owned slots into `pool`, appending handles to `out`,
    /// and gives each slot back (`TP_STATUS_KERNEL`) as soon as it is read. A descriptor whose
    /// frame does not lie inside its own slot is dropped (`rx_bad_descriptor`), never read.
    fn burst(
        &mut self,
        pool: &mut Pool,
        out: &mut Vec<u32>,
        max: usize,
        stats: &mut PortStats,
        extra: &mut AfPacketStats,
    ) -> usize {
        let mut got = 0;
        // Visit every slot at most once per burst.
        let mut seen = 0;
        while got < max && seen < self.frame_count {
            let s = self.slot(self.next);
            // SAFETY: a slot start inside the ring (next < frame_count, `new`'s contract), 16-aligned;
            // its status word is only accessed atomically, by us and by the kernel.
            let status = unsafe { load_status(s.wrapping_add(sys::hdr2::STATUS)) };
            if status & sys::TP_STATUS_USER == 0 {
                break;
            }
            // SAFETY: every header field lies inside the slot (offsets < HDRLEN <= frame_size),
            // aligned to its size (slots are 16-aligned); the slot is ours (status USER, acquired
            // above), volatile because the memory is shared with the kernel.
            let (wire_len, snaplen, mac, tci, tpid, pkttype) = unsafe {
                (
                    ptr::read_volatile(s.add(sys::hdr2::LEN).cast::<u32>()) as usize,
                    ptr::read_volatile(s.add(sys::hdr2::SNAPLEN).cast::<u32>()) as usize,
                    usize::from(ptr::read_volatile(s.add(sys::hdr2::MAC).cast::<u16>())),
                    ptr::read_volatile(s.add(sys::hdr2::VLAN_TCI).cast::<u16>()),
                    ptr::read_volatile(s.add(sys::hdr2::VLAN_TPID).cast::<u16>()),
                    ptr::read_volatile(s.add(sys::hdr2::PKTTYPE)),
                )
            };
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
                // SAFETY: `s + mac .. s + mac + snaplen` lies inside the slot (checked above),
                // which the kernel does not write while its status is TP_STATUS_USER.
                match unsafe { copy_in(pool, s.add(mac), snaplen, tag) } {
                    Some(h) => {
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
            // SAFETY: the slot's status word, as above; hands the slot back to the kernel.
            unsafe { store_status(s.wrapping_add(sys::hdr2::STATUS), sys::TP_STATUS_KERNEL) };
            self.next = (self.next + 1) % self.frame_count;
            seen += 1;
        }
        got
    }
}

/// The RX ring of either mode.
#[derive(Debug)]
enum Rx {
    Block(RxRing),
    Frame(FrameRing),
}

/// Where the fields of a TX slot header are: `tpacket3_hdr` (block mode) or `tpacket2_hdr`
/// (frame mode); the kernel reads `tp_len` and the data at `tp_hdrlen - sizeof(sockaddr_ll)`.
#[derive(Debug, Clone, Copy)]
struct TxLayout {
    status: usize,
    len: usize,
    snaplen: usize,
    /// `tp_next_offset`, which V3 requires to be 0.
    next_offset: Option<usize>,
    data: usize,
}

impl TxLayout {
    fn of(mode: RxMode) -> TxLayout {
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

/// A port on a kernel interface through an AF_PACKET socket (see the module doc).
#[derive(Debug)]
pub struct AfPacketPort {
    config: AfPacketConfig,
    ifindex: i32,
    mtu: usize,
    // Field order matters: the mapping is unmapped before the socket closes.
    map: Mapping,
    fd: OwnedFd,
    block_size: usize,
    rx: Rx,
    tx_layout: TxLayout,
    /// TX: ring starts at `map.base + tx_base`; next slot to fill.
    tx_base: usize,
    tx_slots: usize,
    tx_slots_per_block: usize,
    tx_next: usize,
    stats: PortStats,
    extra: AfPacketStats,
    /// Kernel counters accumulated from `PACKET_STATISTICS` (which resets on each read).
    kernel_drops: Cell<u64>,
    kernel_freeze: Cell<u64>,
}

// SAFETY: the raw pointer in `map` points into a mapping owned exclusively by this port; nothing
// else in the process aliases it, so moving the port to another thread moves sole access with it.
unsafe impl Send for AfPacketPort {}

fn os_err(port: &AfPacketConfig, step: &'static str) -> AfPacketError {
    AfPacketError::Syscall {
        port: port.name.clone(),
        interface: port.interface.clone(),
        step,
        source: io::Error::last_os_error(),
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` is a live, initialised `T` and the length passed is exactly its size; the
    // kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            core::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `ioctl(SIOCGIF*)` on `interface` through socket `fd`, returning the first 4 bytes of the union
/// as i32.
fn ifreq(fd: RawFd, interface: &str, request: libc::c_ulong) -> Option<i32> {
    let mut req = sys::IfReq {
        name: [0; 16],
        data: [0; 24],
    };
    for (d, s) in req.name.iter_mut().zip(interface.bytes().take(15)) {
        *d = s as libc::c_char;
    }
    // SAFETY: `req` is a properly sized `struct ifreq` with a NUL-terminated name (at most 15
    // bytes copied into 16); the kernel writes within it.
    let rc = unsafe { libc::ioctl(fd, request as _, &mut req as *mut sys::IfReq) };
    (rc == 0).then(|| i32::from_ne_bytes(req.data[..4].try_into().expect("4 bytes")))
}

/// Where the kernel puts an Ethernet frame in a TPACKET_V2 RX slot:
/// `TPACKET_ALIGN(TPACKET2_HDRLEN + 16) - ETH_HLEN` (tpacket_rcv's `macoff`).
const V2_RX_MAC: usize = 66;

/// The RX slot size in frame mode: room for the largest frame the interface passes at `mtu`
/// (MTU + Ethernet header + one inner VLAN tag; the outer tag is taken off into the descriptor)
/// after the slot's header area, in 16-byte steps, but never more than `frame_size`. Smaller slots
/// than the TX ring's mean more frames per ring: 5288 instead of 512 at MTU 1500 with 16 KiB
/// TX slots and 8 MiB rings.
fn rx_slot_size(frame_size: u32, mtu: usize) -> u32 {
    let need = (V2_RX_MAC + ETH_HLEN + VLAN_TAG).saturating_add(mtu);
    let need = need.saturating_add(15) & !15;
    u32::try_from(need)
        .unwrap_or(u32::MAX)
        .clamp(128, frame_size)
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
        // SAFETY: maps the socket's rings (RX then TX, each `ring_bytes`), as packet_mmap.rst
        // describes; the result is checked before use and unmapped by `Mapping::drop`.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(os_err(c, "mmap(rings)"));
        }
        let map = Mapping {
            base: base.cast(),
            len,
        };
        let map_base = map.base;

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
            map,
            fd,
            block_size: c.block_size as usize,
            rx: match c.rx_mode {
                // SAFETY: the mapping starts with the RX ring of block_count blocks of block_size
                // bytes, page-aligned, and lives in `port.map` as long as `port.rx`.
                RxMode::Block => Rx::Block(unsafe {
                    RxRing::new(map_base, c.block_size as usize, c.block_count as usize)
                }),
                // SAFETY: as above; the kernel laid out block_size / rx_slot slots of rx_slot
                // bytes (a multiple of 16 in 128..=frame_size <= block_size) in each block.
                RxMode::Frame => Rx::Frame(unsafe {
                    FrameRing::new(
                        map_base,
                        c.block_size as usize,
                        rx_slot as usize,
                        ((c.block_size / rx_slot) * c.block_count) as usize,
                    )
                }),
            },
            tx_layout: TxLayout::of(c.rx_mode),
            tx_base: ring_bytes,
            tx_slots: (frames_per_block * c.block_count) as usize,
            tx_slots_per_block: frames_per_block as usize,
            tx_next: 0,
            stats: PortStats::default(),
            extra: AfPacketStats::default(),
            kernel_drops: Cell::new(0),
            kernel_freeze: Cell::new(0),
            config,
        };
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
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(false)
            } else {
                Err(e)
            };
        }
        Ok(rc > 0 && pfd.revents & libc::POLLIN != 0)
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
        AfPacketStats {
            kernel_drops: self.kernel_drops.get(),
            kernel_freeze_q: self.kernel_freeze.get(),
            ..self.extra
        }
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

    #[inline]
    fn tx_slot_ptr(&self, i: usize) -> *mut u8 {
        let block = i / self.tx_slots_per_block;
        let within = i % self.tx_slots_per_block;
        self.map.base.wrapping_add(
            self.tx_base + block * self.block_size + within * self.config.frame_size as usize,
        )
    }

    /// Asks the kernel to send the pending slots. Returns false on a hard error (the interface is
    /// gone or down: ENXIO, ENETDOWN, …), where the kernel has taken none of them.
    fn kick(&mut self) -> bool {
        // SAFETY: sendto with a NULL buffer of length 0 on our packet socket: the documented way to
        // ask the kernel to send the TX ring's pending slots (packet_mmap.rst); nothing is read.
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
        if rc < 0 {
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                // The slots stay queued; the next kick sends them.
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => {}
                _ => {
                    self.extra.tx_kick_errors += 1;
                    return false;
                }
            }
        }
        true
    }

    /// Takes back the last `n` slots queued (ending before `tx_next`) after a failed kick, if the
    /// kernel has not touched them, so that they do not go out later or block the ring. Returns
    /// the bytes they held, or `None` (nothing changed) if any of them is no longer SEND_REQUEST.
    fn reclaim(&mut self, n: usize) -> Option<u64> {
        let lay = self.tx_layout;
        let first = (self.tx_next + self.tx_slots - n) % self.tx_slots;
        let slots: Vec<*mut u8> = (0..n)
            .map(|k| self.tx_slot_ptr((first + k) % self.tx_slots))
            .collect();
        // The kernel only takes slots inside a kick (sendto) on this socket, which we own and
        // which just failed before taking any, so these slots are not changing under us.
        let all_pending = slots.iter().all(|&p| {
            // SAFETY: a slot start inside the TX ring; status words are accessed atomically.
            let status = unsafe { load_status(p.wrapping_add(lay.status)) };
            status == sys::TP_STATUS_SEND_REQUEST
        });
        if !all_pending {
            return None;
        }
        let mut bytes = 0;
        for &p in &slots {
            // SAFETY: LEN is a 4-aligned field inside a TX slot that is still ours (SEND_REQUEST, untaken).
            bytes += u64::from(unsafe { ptr::read_volatile(p.add(lay.len).cast::<u32>()) });
            // SAFETY: the slot's status word, accessed atomically; we hand the slot back to ourselves.
            unsafe { store_status(p.wrapping_add(lay.status), sys::TP_STATUS_AVAILABLE) };
        }
        self.tx_next = first;
        Some(bytes)
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

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        let slot_max = self.config.max_tx_frame();
        let lay = self.tx_layout;
        let mut sent = 0;
        // Kick when we queued frames, and also when the ring was full: slots may still wait in
        // SEND_REQUEST because an earlier kick ran out of socket buffer (EAGAIN/ENOBUFS).
        let mut kick = false;
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
            let slot = self.tx_slot_ptr(self.tx_next);
            // SAFETY: tx_next < tx_slots, so `slot` is a 16-aligned slot start inside the TX ring;
            // its status word is only accessed atomically (kernel and us).
            let status = unsafe { load_status(slot.wrapping_add(lay.status)) };
            if status & sys::TP_STATUS_WRONG_FORMAT != 0 {
                // An earlier frame, counted as sent then, that the kernel refused.
                self.extra.tx_kernel_rejected += 1;
                self.stats.tx_packets = self.stats.tx_packets.saturating_sub(1);
                self.stats.tx_dropped += 1;
            } else if status & (sys::TP_STATUS_SEND_REQUEST | sys::TP_STATUS_SENDING) != 0 {
                let left = (pkts.len() - i) as u64;
                self.extra.tx_ring_full += left;
                kick = true;
                self.stats.tx_dropped += left;
                break;
            }
            // The slot is ours (AVAILABLE): write data after the header, then hand it over.
            let data = slot.wrapping_add(lay.data);
            let mut copied = 0;
            for seg in pool.segments(h) {
                // Never more than `len` (<= frame_size - data offset, checked above), whatever the
                // chain says.
                let n = seg.len().min(len - copied);
                // SAFETY: the slot is user-owned (status AVAILABLE, checked above) and has room for
                // frame_size - lay.data >= len >= copied + n bytes of data; `seg` is process-private.
                unsafe { ptr::copy_nonoverlapping(seg.as_ptr(), data.add(copied), n) };
                copied += n;
            }
            // SAFETY: header fields of the user-owned slot, 4-byte aligned (slots are 16-aligned).
            unsafe {
                if let Some(next) = lay.next_offset {
                    ptr::write_volatile(slot.add(next).cast::<u32>(), 0);
                }
                ptr::write_volatile(slot.add(lay.len).cast::<u32>(), len as u32);
                ptr::write_volatile(slot.add(lay.snaplen).cast::<u32>(), len as u32);
            }
            // SAFETY: as for the load above.
            unsafe { store_status(slot.wrapping_add(lay.status), sys::TP_STATUS_SEND_REQUEST) };
            self.tx_next = (self.tx_next + 1) % self.tx_slots;
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += len as u64;
            sent += 1;
            kick = true;
        }
        if kick && !self.kick() && sent > 0 {
            // The interface is gone or down: this burst's frames will not go out.
            if let Some(bytes) = self.reclaim(sent) {
                self.stats.tx_packets -= sent as u64;
                self.stats.tx_bytes -= bytes;
                self.stats.tx_dropped += sent as u64;
                return 0;
            }
        }
        sent
    }

    fn poll_control(&mut self) {
        self.poll_kernel_stats();
    }

    fn stats(&self) -> PortStats {
        self.poll_kernel_stats();
        let mut s = self.stats;
        s.rx_dropped += self.kernel_drops.get();
        s
    }

    fn clear_stats(&mut self) {
        self.poll_kernel_stats();
        self.stats = PortStats::default();
        self.extra = AfPacketStats::default();
        self.kernel_drops.set(0);
        self.kernel_freeze.set(0);
    }

    fn link(&self) -> LinkState {
        match self.ifreq(libc::SIOCGIFFLAGS as libc::c_ulong) {
            Some(flags) if flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0 => {
                LinkState::Up
            }
            _ => LinkState::Down,
        }
    }

    fn describe(&self) -> String {
        format!(
            "af_packet {} ifindex {} mtu {} {} tx {} slots of {}{}",
            self.config.interface,
            self.ifindex,
            self.mtu,
            match &self.rx {
                Rx::Block(r) => format!(
                    "tpacket_v3 rx_mode block rx {}x{}",
                    r.block_count, self.block_size
                ),
                Rx::Frame(r) => format!(
                    "tpacket_v2 rx_mode frame rx {} slots of {}",
                    r.frame_count, r.frame_size
                ),
            },
            self.tx_slots,
            self.config.frame_size,
            if self.config.fanout.is_some() {
                " fanout"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ordinary 16-aligned memory standing in for a kernel ring, written and read through raw
    /// pointers only (as the kernel writes it), so that a ring's own pointer into it stays valid.
    /// Shared by the simulated V3 (`FakeRing`) and V2 (`FakeSlots`) rings, which deref to it.
    struct SimMem(Vec<u128>);

    impl SimMem {
        fn new(bytes: usize) -> SimMem {
            SimMem(vec![0u128; bytes / 16])
        }
        fn base(&mut self) -> *mut u8 {
            self.0.as_mut_ptr().cast()
        }
        /// Writes `bytes` at byte `at`.
        fn put(&mut self, at: usize, bytes: &[u8]) {
            assert!(at + bytes.len() <= self.0.len() * 16);
            // SAFETY: in bounds (asserted); `as_mut_ptr` creates no reference to the buffer.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), self.base().add(at), bytes.len()) };
        }
        fn put32(&mut self, at: usize, v: u32) {
            self.put(at, &v.to_ne_bytes());
        }
        fn get32(&mut self, at: usize) -> u32 {
            assert!(at + 4 <= self.0.len() * 16);
            // SAFETY: in bounds (asserted), read through a raw pointer as above.
            unsafe { ptr::read_unaligned(self.base().add(at).cast::<u32>()) }
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
            // SAFETY: `mem` is 16-aligned, block_size * blocks bytes, outlives the ring in each test
            // and nobody else writes it while the ring reads.
            unsafe { RxRing::new(self.mem.base().cast(), self.block_size, self.blocks) }
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
            // SAFETY: `mem` is 16-aligned and holds every block; it outlives the ring in each test
            // and nobody else writes it while the ring reads.
            unsafe {
                FrameRing::new(
                    self.mem.base().cast(),
                    self.block_size,
                    self.frame_size,
                    self.count,
                )
            }
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
    fn rx_mode_serde_names_and_default() {
        fn parse(s: &str) -> Result<RxMode, String> {
            use serde::de::IntoDeserializer;
            let d: serde::de::value::StrDeserializer<serde::de::value::Error> =
                s.into_deserializer();
            RxMode::deserialize(d).map_err(|e| e.to_string())
        }
        assert_eq!(parse("block"), Ok(RxMode::Block));
        assert_eq!(parse("frame"), Ok(RxMode::Frame));
        let err = parse("fast").unwrap_err();
        assert!(
            err.contains("rx_mode")
                && err.contains("fast")
                && err.contains("block")
                && err.contains("frame"),
            "{err}"
        );
        assert_eq!("frame".parse::<RxMode>(), Ok(RxMode::Frame));
        assert_eq!("Frame".parse::<RxMode>(), Err(RxModeError("Frame".into())));
        assert_eq!(AfPacketConfig::default().rx_mode, RxMode::Block);
        let frame_mode = AfPacketConfig {
            rx_mode: RxMode::Frame,
            ..AfPacketConfig::new("p", "eth0")
        };
        assert_eq!(frame_mode.max_tx_frame(), 2048 - 32);
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

    fn field_of(c: &AfPacketConfig) -> Option<(&'static str, String)> {
        match c.validate() {
            Ok(()) => None,
            Err(AfPacketError::Config { field, value, .. }) => Some((field, value)),
            Err(e) => panic!("unexpected {e}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        let c = AfPacketConfig::new("p", "eth0");
        assert_eq!(c.validate().map_err(|e| e.to_string()), Ok(()));
        assert!(c.promiscuous);
        assert_eq!(c.max_tx_frame(), 2000);
    }

    #[test]
    fn each_bad_field_is_named_with_its_value() {
        let base = AfPacketConfig::new("p", "eth0");
        let cases: Vec<(AfPacketConfig, &str, &str)> = vec![
            (
                AfPacketConfig {
                    name: String::new(),
                    ..base.clone()
                },
                "name",
                "\"\"",
            ),
            (
                AfPacketConfig {
                    interface: "a-very-long-ifname".into(),
                    ..base.clone()
                },
                "interface",
                "\"a-very-long-ifname\"",
            ),
            (
                AfPacketConfig {
                    interface: "a/b".into(),
                    ..base.clone()
                },
                "interface",
                "\"a/b\"",
            ),
            (
                AfPacketConfig {
                    block_size: 6000,
                    ..base.clone()
                },
                "block_size",
                "6000",
            ),
            (
                AfPacketConfig {
                    block_size: 2048,
                    ..base.clone()
                },
                "block_size",
                "2048",
            ),
            (
                AfPacketConfig {
                    block_count: 0,
                    ..base.clone()
                },
                "block_count",
                "0",
            ),
            (
                AfPacketConfig {
                    block_count: 2000,
                    ..base.clone()
                },
                "block_count",
                "2000",
            ),
            (
                AfPacketConfig {
                    frame_size: 100,
                    ..base.clone()
                },
                "frame_size",
                "100",
            ),
            (
                AfPacketConfig {
                    frame_size: 2050,
                    ..base.clone()
                },
                "frame_size",
                "2050",
            ),
            (
                AfPacketConfig {
                    block_size: 4096,
                    frame_size: 8192,
                    ..base.clone()
                },
                "frame_size",
                "8192",
            ),
            (
                AfPacketConfig {
                    block_timeout_ms: 0,
                    ..base.clone()
                },
                "block_timeout_ms",
                "0",
            ),
        ];
        for (c, field, value) in cases {
            assert_eq!(field_of(&c), Some((field, value.to_string())), "{c:?}");
            let msg = c.validate().unwrap_err().to_string();
            assert!(
                msg.contains(field) && msg.contains(value) && msg.contains("expected"),
                "{msg}"
            );
        }
    }
}
