//! AF_XDP port: a kernel interface (veth, a NIC) through an XDP socket, the kernel's fast path
//! to user space.
//!
//! - [`AfXdpConfig`] names the port, the interface and the receive queue, sizes the rings and the
//!   UMEM and picks the [`XdpMode`]; [`AfXdpConfig::validate`] names the bad field, its value
//!   and what is accepted.
//! - [`AfXdpPort`] implements [`Port`]: [`AfXdpPort::open`] opens an interface of the caller's
//!   network namespace, [`AfXdpPort::open_in_netns`] one inside another namespace.
//! - [`AfXdpStats`] holds the kernel's `XDP_STATISTICS` and the port's own drop counters.
//! - [`rings`] holds every access to memory shared with the kernel; [`bpf`] the XDP program.
//!
//! ## How it works (Documentation/networking/af_xdp.rst)
//!
//! The port owns a UMEM of `rx_size + tx_size` chunks of `frame_size` bytes, shared with nothing
//! else, and the socket's four rings. The first `rx_size` chunks receive: all of them start on the
//! fill ring; the kernel copies a received frame into one and posts it on the RX ring; `rx_burst`
//! copies it into the [`Pool`] and puts the chunk straight back on the fill ring (the fill ring
//! can never overflow: it has as many slots as there are receive chunks). The other `tx_size`
//! chunks send: `tx_burst` copies a packet into a free one and posts it on the TX ring; the
//! kernel returns the chunk on the completion ring once the frame has left.
//!
//! The socket is bound in copy mode (`XDP_COPY`; veth has no zero-copy) with need-wakeup
//! (`XDP_USE_NEED_WAKEUP`): the port kicks the kernel (`sendto`) only when the TX ring's flag
//! asks for it, and calls `recvfrom` for the fill ring only when that ring's flag asks for it or
//! busy polling is on. In copy mode the kernel sends at most a *budget* of frames per kick,
//! returning `EAGAIN` for the rest: 32 by default (`TX_BATCH_SIZE` in net/xdp/xsk.c); the port
//! raises it to the TX ring's size with `XDP_MAX_TX_SKB_BUDGET` (af_xdp.rst; kernel >= 6.17; on an
//! older kernel, which refuses the option, it stays 32), so that one kick hands the kernel a whole
//! burst; `describe` shows it (`tx budget`). A burst kicks until the kernel has taken every posted frame;
//! frames still posted after that (the peer could not take them) are sent by the next burst or by
//! [`Port::poll_control`]. A frame counts in `tx_packets` when the kernel took it off the TX ring,
//! never before.
//!
//! Frames reach the socket through a minimal XDP program loaded by the port itself ([`bpf`]: an
//! XSKMAP and `bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)`; no libbpf, BTF or bpffs)
//! and attached by a BPF link, in driver (native) mode where the driver has XDP (veth does) or
//! in generic SKB mode otherwise (`mode = "auto"` tries native, then SKB). Closing the link when
//! the port drops detaches the program; frames of other queues, and every frame while the socket
//! is not in the map, go to the kernel stack (`XDP_PASS`).
//!
//! On veth, native XDP on the receiving end runs in that veth's NAPI context, which attaching
//! the program enables, on the CPU of whoever transmitted into the peer; in SKB mode it runs in
//! the normal receive path, where RPS can place it.
//!
//! VLAN tags stay in the frame: XDP (native or generic) sees the frame before the kernel takes a
//! tag out into the skb (`skb_vlan_untag`), so unlike AF_PACKET nothing needs putting back.
//!
//! ## In-kernel cross-connect
//!
//! [`AfXdpPort::set_offload`] (its [`crate::KernelRedirect`], `Port::kernel_redirect`; an `[[xconnect]]` with
//! `offload = "xdp"`, docs/CONTROL.md) swaps the program on the port's BPF link
//! (`BPF_LINK_UPDATE`) for one that counts each frame in a per-CPU array and `bpf_redirect`s it
//! to another interface ([`bpf`], "The in-kernel cross-connect"); `None` swaps the socket's
//! program back. The socket, UMEM and rings stay (the port is the same object, and nothing needs
//! re-binding when the offload goes); they just receive nothing. Native mode only: a generic
//! (SKB-mode) redirect that fails is counted nowhere. The program's counts are added to
//! `rx_packets`/`rx_bytes` (kept when the offload goes, re-based by `clear_stats`). The frames
//! cross no socket, so the port's other counters do not see them: a redirect that fails after
//! the program (on veth: the target's peer end has no NAPI, `NETDEV_XDP_ACT_NDO_XMIT` is off) is
//! counted by the kernel in this interface's `rx_dropped` — added to the port's `rx_dropped`
//! and shown as `kernel-xdp-redirect-failed` while offloaded — and a frame the target's peer
//! could not queue in the target interface's `tx_dropped` (the target port's
//! `kernel-interface-tx-dropped`). Measured on kernel 6.18 (crates/ports/tests/afxdp_offload.rs):
//! veth's `ethtool -S` names them `rx_queue_0_drops` and `tx_queue_0_xdp_xmit_errors`, and
//! `veth_get_stats64` folds both into the `IFLA_STATS64` counters the port already reads
//! ([`crate::ifstats`]), so no `ETHTOOL_GSTATS` reading is needed. A port re-opened on a
//! re-created interface gets the same redirect on the new interface; a target interface
//! re-created under its name (a new index) is followed at the next interface check (at most
//! 100 ms; frames sent meanwhile fail and are counted as above).
//!
//! ## Interface removed under the port
//!
//! As for AF_PACKET (see its module doc): an XDP socket is bound to a device, and an interface
//! deleted and created again under the same name is a new device. [`Port::poll_control`] looks
//! at most every 100 ms whether the name still stands for the ifindex the socket was bound to:
//! the name gone → the port is `down` with the reason in `describe`; another device under the
//! name → the port opens a new socket, UMEM and XDP program on it (in the namespace it was opened
//! in) and takes their place, keeping its counters (`interface-re-opened` in `show errors`);
//! frames offered while the interface is gone, and frames still posted on the old TX ring, are
//! counted in `tx-unsent-dropped`. [`Port::link`] is
//! `down` as soon as the name no longer stands for the socket's device.
//!
//! ## Counters
//!
//! System calls are counted: `tx_kicks` (`sendto`, one per burst, or per budget of a larger
//! one: see [`AfXdpPort::tx_budget`]) and `rx_wakeups` (`recvfrom`, only under need-wakeup or
//! busy polling), shown in `describe`.
//!
//! On veth, busy polling does not keep the receive NAPI on the worker's CPU: the peer's
//! `veth_xmit` schedules it on the sender's CPU whenever the worker is not inside a busy poll
//! (counted with the `napi:napi_poll` tracepoint, docs/BENCHMARKS.md §5, "Whose ceiling the veth
//! NDRs are").
//!
//! ## Busy polling with NAPI deferral
//!
//! With `busy_poll_us > 0` *and* `napi_defer_hard_irqs` / `gro_flush_timeout_us` set, the port
//! writes them to the interface (sysfs, in the port's namespace; they stay on the device) and the
//! socket owns the receive NAPI (`SO_PREFER_BUSY_POLL`, Documentation/networking/napi.rst): after
//! each busy poll the kernel leaves the NAPI scheduled, with a `gro_flush_timeout_us` watchdog, so
//! the peer's `veth_xmit` only queues frames (on veth with native XDP, into the 256-entry ring of
//! the receiving end) and the next `rx_burst` polls them in one batch of up to `busy_poll_budget`
//! in its `recvfrom` — on the caller's CPU — instead of one NAPI poll per frame in the sender's
//! softirq. If the port is not polled within the timeout, the watchdog polls as before: no frame
//! waits longer. `rx_burst` busy-polls whenever the ring holds fewer frames than asked for, so
//! the peer's ring is emptied every call. Measured on a veth pair with the generator on one CPU
//! (docs/BENCHMARKS.md §6.3): 1.05–1.23 NAPI polls per frame without, 0.02 with; the
//! generator's frames per CPU-second 1.5× (579 k against 382 k). On veth, a sender whose txq has
//! no queue (`noqueue`, the default) has a frame dropped when this ring is full (counted as its
//! `tx_dropped`); with a qdisc it is back-pressured instead.
//!
//! A busy poll needs the socket's NAPI id (`SO_INCOMING_NAPI_ID`, which the kernel records once,
//! from the first frame the socket receives): without one the kernel's `sk_busy_loop` does
//! nothing, and a `recvfrom` for it is a system call that polls nothing. veth on kernel 6.18
//! gives its XDP receive queues no NAPI id (the id was 0 on every socket measured, and the napi
//! trace showed no poll made by the busy-polling thread: docs/BENCHMARKS.md §5, "Where vecswitch
//! AF_XDP's cycles go"), so there busy polling is inert. The port reads the id after binding and,
//! while it is 0, again in [`Port::poll_control`]; it calls `recvfrom` for busy polling only
//! once the id is known (`describe` shows it: `napi id`). So on veth what batches the receive NAPI is the deferral
//! alone: `veth_xmit` leaves the NAPI to `gro_flush_timeout`'s timer, which polls it (in its
//! NAPI thread where it is threaded, else in softirq on the CPU that armed it) once per timeout —
//! frames wait up to the timeout, and the `recvfrom` calls above were spent for nothing.
//!
//! `rx_dropped` = kernel drops (`XDP_STATISTICS`: `rx_dropped`, which includes frames that found
//! the fill ring empty, `rx_ring_full` and `rx_invalid_descs`) + descriptors outside the UMEM +
//! frames that found no pool buffer. `tx_dropped` = frames not posted (TX ring or chunks
//! exhausted, too long for a chunk or the MTU) + `tx_invalid_descs`. `XDP_STATISTICS` does not
//! reset on read; [`Port::clear_stats`] keeps a baseline.
//!
//! The `unsafe` of this port is in [`rings`] (shared memory), [`bpf`] (the `bpf` syscall) and the
//! socket calls below, each block with the reason it is sound.

pub mod bpf;
pub mod rings;
pub mod sys;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr;

use serde::{Deserialize, Serialize};
use thiserror::Error;
use vecswitch_buffer::{Pool, DATA_SIZE, HEADROOM};

use self::rings::{Ring, Umem};
use self::sys::XdpDesc;
use crate::ifstats::{IfKernelStats, IfStatsReader};
use crate::ifwatch::{self, IfWatch, NetnsHandle};
use crate::{KernelRedirect, LinkState, Port, PortStats, RedirectError};

/// How the XDP program is attached (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum XdpMode {
    /// Native (driver) mode if the driver has it, else SKB mode.
    #[default]
    Auto,
    /// Driver mode only (`XDP_FLAGS_DRV_MODE`); opening fails where the driver lacks XDP.
    Native,
    /// Generic mode (`XDP_FLAGS_SKB_MODE`): works on any interface, after the skb is built.
    Skb,
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            XdpMode::Auto => "auto",
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        })
    }
}

/// A string that is not an [`XdpMode`]; names the field, the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("mode = {0:?} is not accepted; expected \"auto\", \"native\" or \"skb\"")]
pub struct XdpModeError(pub String);

impl std::str::FromStr for XdpMode {
    type Err = XdpModeError;
    fn from_str(s: &str) -> Result<XdpMode, XdpModeError> {
        match s {
            "auto" => Ok(XdpMode::Auto),
            "native" => Ok(XdpMode::Native),
            "skb" => Ok(XdpMode::Skb),
            _ => Err(XdpModeError(s.to_string())),
        }
    }
}

impl TryFrom<String> for XdpMode {
    type Error = XdpModeError;
    fn try_from(s: String) -> Result<XdpMode, XdpModeError> {
        s.parse()
    }
}

/// Largest receive queue index accepted (the XSKMAP has this many + 1 slots at most).
const MAX_QUEUE: u32 = 255;
/// Ethernet header, and one 802.1Q tag: what a frame may carry beyond the MTU.
const ETH_HLEN: usize = 14;
const VLAN_TAG: usize = 4;

/// Configuration of an AF_XDP port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AfXdpConfig {
    /// The port's name in the switch (`show ports`).
    pub name: String,
    /// Kernel interface to open, at most 15 bytes.
    pub interface: String,
    /// Receive (and transmit) queue of the interface, 0..=255.
    pub queue: u32,
    /// `auto`, `native` or `skb` (see [`XdpMode`]).
    pub mode: XdpMode,
    /// Bytes per UMEM chunk: 2048 or 4096. A received frame starts 256 bytes into its chunk, so
    /// the largest frame is 1792 (3840) bytes; the largest sent is `frame_size`.
    pub frame_size: u32,
    /// Entries of the RX and fill rings, and receive chunks: a power of two, 64..=16384.
    pub rx_size: u32,
    /// Entries of the TX and completion rings, and transmit chunks: a power of two, 64..=16384.
    pub tx_size: u32,
    /// Busy polling: `SO_BUSY_POLL` microseconds with `SO_PREFER_BUSY_POLL`, 0 (off) ..= 1000.
    pub busy_poll_us: u32,
    /// `SO_BUSY_POLL_BUDGET`: frames per busy poll, 1..=1024 (used when busy polling is on).
    pub busy_poll_budget: u32,
    /// The interface's `napi_defer_hard_irqs` (sysfs), set at open: 0 leaves the device's setting
    /// alone; 1..=100 with busy polling (see "Busy polling with NAPI deferral").
    pub napi_defer_hard_irqs: u32,
    /// The interface's `gro_flush_timeout` in microseconds (sysfs, in ns), set at open with
    /// `napi_defer_hard_irqs`: 0 leaves the device's setting alone, else 1..=10000.
    pub gro_flush_timeout_us: u32,
}

impl Default for AfXdpConfig {
    fn default() -> Self {
        AfXdpConfig {
            name: String::new(),
            interface: String::new(),
            queue: 0,
            mode: XdpMode::Auto,
            frame_size: 2048,
            rx_size: 2048,
            tx_size: 2048,
            busy_poll_us: 0,
            busy_poll_budget: 64,
            napi_defer_hard_irqs: 0,
            gro_flush_timeout_us: 0,
        }
    }
}

impl AfXdpConfig {
    /// Defaults for port `name` on `interface`: queue 0, mode auto, 2048-byte chunks, 2048-entry
    /// rings, no busy polling.
    pub fn new(name: &str, interface: &str) -> AfXdpConfig {
        AfXdpConfig {
            name: name.to_string(),
            interface: interface.to_string(),
            ..Default::default()
        }
    }

    /// The largest frame the port receives whole.
    pub fn max_rx_frame(&self) -> usize {
        (self.frame_size - sys::XDP_PACKET_HEADROOM) as usize
    }

    /// Checks every field; the error names the first bad one, its value and what is accepted.
    pub fn validate(&self) -> Result<(), AfXdpError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AfXdpError::Config {
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
        if self.queue > MAX_QUEUE {
            return bad("queue", self.queue.to_string(), "0 to 255");
        }
        if self.frame_size != 2048 && self.frame_size != 4096 {
            return bad("frame_size", self.frame_size.to_string(), "2048 or 4096");
        }
        let ring_ok = |n: u32| n.is_power_of_two() && (64..=16384).contains(&n);
        if !ring_ok(self.rx_size) {
            return bad(
                "rx_size",
                self.rx_size.to_string(),
                "a power of two from 64 to 16384",
            );
        }
        if !ring_ok(self.tx_size) {
            return bad(
                "tx_size",
                self.tx_size.to_string(),
                "a power of two from 64 to 16384",
            );
        }
        if self.busy_poll_us > 1000 {
            return bad(
                "busy_poll_us",
                self.busy_poll_us.to_string(),
                "0 (off) to 1000 microseconds",
            );
        }
        if self.napi_defer_hard_irqs > 100 {
            return bad(
                "napi_defer_hard_irqs",
                self.napi_defer_hard_irqs.to_string(),
                "0 (leave the device's setting) to 100",
            );
        }
        if self.gro_flush_timeout_us > 10_000 {
            return bad(
                "gro_flush_timeout_us",
                self.gro_flush_timeout_us.to_string(),
                "0 (leave the device's setting) to 10000 microseconds",
            );
        }
        if (self.napi_defer_hard_irqs > 0) != (self.gro_flush_timeout_us > 0) {
            return bad(
                "gro_flush_timeout_us",
                self.gro_flush_timeout_us.to_string(),
                "non-zero exactly when napi_defer_hard_irqs is (the kernel defers only with both)",
            );
        }
        if self.napi_defer_hard_irqs > 0 && self.busy_poll_us == 0 {
            return bad(
                "napi_defer_hard_irqs",
                self.napi_defer_hard_irqs.to_string(),
                "0 unless busy_poll_us > 0 (without busy polling deferral only delays every frame by gro_flush_timeout_us)",
            );
        }
        if self.busy_poll_budget == 0 || self.busy_poll_budget > 1024 {
            return bad(
                "busy_poll_budget",
                self.busy_poll_budget.to_string(),
                "1 to 1024 frames",
            );
        }
        Ok(())
    }
}

/// Errors opening an AF_XDP port.
#[derive(Debug, Error)]
pub enum AfXdpError {
    #[error("af_xdp port {port:?}: {field} = {value} is not accepted; expected {accepted}")]
    Config {
        port: String,
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error(
        "af_xdp port {port:?}: interface = {interface:?} does not exist in this network namespace"
    )]
    NoSuchInterface { port: String, interface: String },
    #[error("af_xdp port {port:?}: cannot open network namespace {netns:?}")]
    Netns {
        port: String,
        netns: String,
        #[source]
        source: io::Error,
    },
    #[error("af_xdp port {port:?} on {interface:?}: {step} failed (needs CAP_NET_ADMIN, CAP_BPF and CAP_IPC_LOCK or root; kernel >= 5.9)")]
    Syscall {
        port: String,
        interface: String,
        step: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("af_xdp port {port:?}: the kernel refused the XDP program: {log}")]
    ProgramRejected {
        port: String,
        log: String,
        #[source]
        source: io::Error,
    },
    #[error("af_xdp port {port:?}: cannot attach XDP to interface {interface:?} in mode = {mode} (another XDP program attached? driver without XDP: try mode = \"skb\")")]
    Attach {
        port: String,
        interface: String,
        mode: XdpMode,
        #[source]
        source: io::Error,
    },
}

/// Counters specific to the AF_XDP backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AfXdpStats {
    /// Kernel: frames dropped for reasons other than a full RX ring (`rx_dropped`; includes
    /// frames that found the fill ring empty).
    pub rx_dropped: u64,
    /// Kernel: frames dropped because the RX ring was full (`rx_ring_full`).
    pub rx_ring_full: u64,
    /// Kernel: times the fill ring was found empty (`rx_fill_ring_empty_descs`).
    pub rx_fill_ring_empty_descs: u64,
    /// Kernel: invalid fill ring entries (`rx_invalid_descs`).
    pub rx_invalid_descs: u64,
    /// Kernel: invalid TX descriptors (`tx_invalid_descs`).
    pub tx_invalid_descs: u64,
    /// Kernel: times the TX ring was found empty when kicked (`tx_ring_empty_descs`).
    pub tx_ring_empty_descs: u64,
    /// RX descriptors pointing outside the UMEM or longer than a chunk: dropped.
    pub rx_bad_descriptor: u64,
    /// Frames that found no free pool buffer: dropped.
    pub rx_no_buffer: u64,
    /// Receive calls that found less room on the fill ring than frames ready (the rest were
    /// left on the RX ring for the next call; should stay 0).
    pub rx_fill_ring_short: u64,
    /// Frames not sent because the TX ring or the transmit chunks were all in use.
    pub tx_ring_full: u64,
    /// Frames not sent because they are longer than a chunk or than the MTU allows.
    pub tx_too_long: u64,
    /// Kicks (`sendto` calls on the socket to make the kernel send the TX ring). Copy mode sends
    /// at most [`AfXdpPort::tx_budget`] frames per kick (the TX ring's size where the kernel takes
    /// `XDP_MAX_TX_SKB_BUDGET`, else 32), so a port kicks once per burst, or once per budget of a
    /// larger one, plus the kicks that found the peer full; never once per frame of a burst (test
    /// `af_xdp_kicks_once_per_burst`).
    pub tx_kicks: u64,
    /// Receive wake-ups (`recvfrom` calls): with busy polling one per receive call that found
    /// fewer frames than it asked for; without, only when the RX ring was empty and the fill ring
    /// asked for one (`XDP_RING_NEED_WAKEUP`, never in copy mode).
    pub rx_wakeups: u64,
    /// Kicks (`sendto`) that failed with something other than "try again".
    pub tx_kick_errors: u64,
    /// Frames posted on the TX ring that the kernel has not taken yet.
    pub tx_pending: u64,
    /// Frames offered while the interface was gone, and frames still posted on the TX ring when
    /// the port re-opened itself on a re-created interface (the old socket closed with them):
    /// dropped.
    pub tx_unsent_dropped: u64,
    /// Times the port re-opened itself on its interface deleted and created again (not a loss).
    pub reopened: u64,
    /// Kernel: frames the interface dropped after the socket let them go (its `tx_dropped`,
    /// [`crate::ifstats`]; on veth: the peer's receive queue was full). The port had counted
    /// them as taken; `stats()` moves them from `tx_packets` to `tx_dropped`.
    pub kernel_if_tx_dropped: u64,
    /// Kernel: the interface's `rx_dropped` (on veth with XDP: frames the XDP redirect into the
    /// socket failed for, which `XDP_STATISTICS` counts too). Shown, not added to `rx_dropped`.
    pub kernel_if_rx_dropped: u64,
    /// Kernel: the veth peer's `tx_dropped` ([`crate::ifstats`]): frames sent toward this port
    /// that the peer could not put into this end's receive queue (its NAPI ring full, 256
    /// frames). Lost if the sender over there does not re-send them (an AF_XDP sender or the
    /// kernel's stack does not; an AF_PACKET one does, and this counts its attempts). Listed,
    /// not added to `rx_dropped`.
    pub kernel_peer_tx_dropped: u64,
}

fn read_xdp_statistics(fd: RawFd) -> sys::XdpStatistics {
    let mut st = sys::XdpStatistics::default();
    let mut len = core::mem::size_of::<sys::XdpStatistics>() as libc::socklen_t;
    // SAFETY: `st` is writable for `len` bytes and `len` is a valid in/out length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            sys::SOL_XDP,
            sys::XDP_STATISTICS,
            (&mut st as *mut sys::XdpStatistics).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        st
    } else {
        sys::XdpStatistics::default()
    }
}

/// The socket's NAPI id (`SO_INCOMING_NAPI_ID`), 0 when the kernel knows none (or the call
/// fails).
fn read_napi_id(fd: RawFd) -> u32 {
    let mut id: u32 = 0;
    let mut len = core::mem::size_of::<u32>() as libc::socklen_t;
    // SAFETY: `id` is writable for `len` bytes and `len` is a valid in/out length.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            sys::SO_INCOMING_NAPI_ID,
            (&mut id as *mut u32).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        id
    } else {
        0
    }
}

/// Sets `interface`'s NAPI deferral (`/sys/class/net/IF/napi_defer_hard_irqs` and
/// `gro_flush_timeout`, Documentation/networking/napi.rst) in the calling thread's network
/// namespace. sysfs shows the namespace of whoever mounted it, so a short-lived thread (it
/// inherits the caller's network namespace) takes a mount namespace of its own, makes every
/// mount a slave (nothing it mounts reaches the host's) and mounts a fresh sysfs on `/sys`, as
/// `ip netns exec` does; its mount namespace ends with it.
fn set_napi_deferral(interface: &str, defer: u32, timeout_ns: u64) -> io::Result<()> {
    let dir = format!("/sys/class/net/{interface}");
    std::thread::scope(|s| {
        s.spawn(|| -> io::Result<()> {
            let cstr = |v: &str| CString::new(v).expect("no NUL");
            let (root, sys, sysfs) = (cstr("/"), cstr("/sys"), cstr("sysfs"));
            // SAFETY: unshare(CLONE_NEWNS) gives this thread (and only it: CLONE_FS is unshared
            // with it) a copy of the mount namespace; no pointer is involved.
            if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `root` is a valid C string; a propagation change on this thread's own copy
            // of the mount tree, so that the sysfs mounted below never propagates to the host.
            let rc = unsafe {
                libc::mount(
                    ptr::null(),
                    root.as_ptr(),
                    ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    ptr::null(),
                )
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: valid C strings; detaches /sys in this thread's private mount tree only (an
            // error — nothing mounted there — is harmless: the mount below covers it).
            unsafe { libc::umount2(sys.as_ptr(), libc::MNT_DETACH) };
            // SAFETY: valid C strings and no data; mounts sysfs for this thread's network
            // namespace in its private mount tree.
            let rc = unsafe {
                libc::mount(sysfs.as_ptr(), sys.as_ptr(), sysfs.as_ptr(), 0, ptr::null())
            };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
            std::fs::write(format!("{dir}/napi_defer_hard_irqs"), defer.to_string())?;
            std::fs::write(format!("{dir}/gro_flush_timeout"), timeout_ns.to_string())?;
            Ok(())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("napi deferral thread panicked")))
    })
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

/// `ioctl(SIOCGIF*)` on `interface` through socket `fd`, returning the first 4 bytes of the union.
fn ifreq(fd: RawFd, interface: &str, request: libc::c_ulong) -> Option<i32> {
    #[repr(C)]
    struct IfReq {
        name: [libc::c_char; 16],
        data: [u8; 24],
    }
    let mut req = IfReq {
        name: [0; 16],
        data: [0; 24],
    };
    for (d, s) in req.name.iter_mut().zip(interface.bytes().take(15)) {
        *d = s as libc::c_char;
    }
    // SAFETY: `req` is a properly sized `struct ifreq` with a NUL-terminated name; the kernel
    // writes within it.
    let rc = unsafe { libc::ioctl(fd, request as _, &mut req as *mut IfReq) };
    (rc == 0).then(|| i32::from_ne_bytes(req.data[..4].try_into().expect("4 bytes")))
}

/// The name of interface `ifindex` in the caller's namespace (`if_indextoname`), if it exists.
fn ifname_of(ifindex: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has the IF_NAMESIZE bytes the call may write, NUL included.
    let p = unsafe { libc::if_indextoname(ifindex, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: on success the kernel wrote a NUL-terminated name into `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// A port on a kernel interface through an AF_XDP socket (see the module doc).
#[derive(Debug)]
pub struct AfXdpPort {
    config: AfXdpConfig,
    ifindex: u32,
    mtu: usize,
    /// The mode the program is attached in (never `Auto`).
    mode: XdpMode,
    // Field order is drop order: detach the program, then the map and the program, then unmap
    // the rings, close the socket, and unmap the UMEM last.
    _link: OwnedFd,
    _map: OwnedFd,
    _prog: OwnedFd,
    fill: Ring<u64>,
    comp: Ring<u64>,
    rx: Ring<XdpDesc>,
    tx: Ring<XdpDesc>,
    fd: OwnedFd,
    /// A datagram socket in the interface's namespace, for ioctls (an XDP socket has none).
    ctl: OwnedFd,
    umem: Umem,
    /// Free transmit chunks (UMEM offsets).
    tx_free: Vec<u64>,
    /// Length of the frame posted at each TX ring index (masked), counted when the kernel takes it.
    tx_lens: Vec<u32>,
    /// TX ring index up to which frames have been counted as sent.
    tx_seen: u32,
    /// Frames the kernel sends per kick (`XDP_MAX_TX_SKB_BUDGET`, or the kernel's default 32).
    tx_budget: u32,
    /// The socket's NAPI id (`SO_INCOMING_NAPI_ID`): 0 while the kernel knows none, and then a
    /// busy poll polls nothing (module doc, "Busy polling with NAPI deferral").
    napi_id: u32,
    /// Scratch for frames longer than one pool buffer.
    scratch: Vec<u8>,
    stats: PortStats,
    extra: AfXdpStats,
    /// `XDP_STATISTICS` at the last `clear_stats`.
    kernel_base: sys::XdpStatistics,
    /// `XDP_STATISTICS` of the sockets this port had before it re-opened itself (since the last
    /// `clear_stats`).
    kernel_retired: sys::XdpStatistics,
    /// Whether the interface is still the one the socket is bound to (see "Interface removed").
    watch: IfWatch,
    /// The namespace the socket lives in, where a re-created interface is re-opened.
    netns: NetnsHandle,
    /// The interface's own kernel counters ([`crate::ifstats`]): the reader (none if the kernel
    /// refused a netlink socket), the reading at open or at the last `clear_stats`, and what the
    /// interfaces this port had before it re-opened itself carried.
    ifstats: Option<IfStatsReader>,
    if_base: IfKernelStats,
    if_retired: IfKernelStats,
    /// The in-kernel cross-connect, while on (see "In-kernel cross-connect" in the module doc).
    offload: Option<Offload>,
}

/// An in-kernel cross-connect: the count-and-redirect program on the port's link, its counter.
#[derive(Debug)]
struct Offload {
    /// The interface the program sends every frame out of.
    to: u32,
    /// Its name when the offload was set: if the name comes to stand for another interface (the
    /// target deleted and created again), the program is re-made for the new index.
    to_name: Option<String>,
    counter: OwnedFd,
    _prog: OwnedFd,
    /// The counter's `(packets, bytes)` at the last `clear_stats`.
    base: (u64, u64),
}

impl Offload {
    /// Frames and bytes the program counted since the last `clear_stats` (the last reading that
    /// succeeded is not kept: a failing read shows as 0 more, and `describe` says it failed).
    fn counted(&self) -> io::Result<(u64, u64)> {
        let (p, b) = bpf::read_counter(self.counter.as_raw_fd())?;
        Ok((p.saturating_sub(self.base.0), b.saturating_sub(self.base.1)))
    }
}

fn mode_flags(mode: XdpMode) -> u32 {
    match mode {
        XdpMode::Native | XdpMode::Auto => sys::XDP_FLAGS_DRV_MODE,
        XdpMode::Skb => sys::XDP_FLAGS_SKB_MODE,
    }
}

impl AfXdpPort {
    /// Opens `config.interface` in the caller's network namespace.
    pub fn open(config: AfXdpConfig) -> Result<AfXdpPort, AfXdpError> {
        config.validate()?;
        let c = &config;
        let syscall = |step: &'static str, source: io::Error| AfXdpError::Syscall {
            port: c.name.clone(),
            interface: c.interface.clone(),
            step,
            source,
        };
        let ifname = CString::new(c.interface.clone()).expect("validated: no NUL");
        // SAFETY: `ifname` is a valid NUL-terminated string that lives across the call.
        let ifindex = unsafe { libc::if_nametoindex(ifname.as_ptr()) };
        if ifindex == 0 {
            return Err(AfXdpError::NoSuchInterface {
                port: c.name.clone(),
                interface: c.interface.clone(),
            });
        }

        // SAFETY: plain syscall with constant arguments.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(syscall(
                "socket(AF_INET) for ioctls",
                io::Error::last_os_error(),
            ));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let ctl = unsafe { OwnedFd::from_raw_fd(raw) };
        let mtu = ifreq(
            ctl.as_raw_fd(),
            &c.interface,
            libc::SIOCGIFMTU as libc::c_ulong,
        )
        .map(|m| m as usize)
        .unwrap_or(1500);

        // SAFETY: plain syscall with constant arguments.
        let raw = unsafe { libc::socket(sys::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(syscall("socket(AF_XDP)", io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let f = fd.as_raw_fd();

        let chunks = (c.rx_size + c.tx_size) as usize;
        let frame = c.frame_size as usize;
        let umem = Umem::new(chunks, frame).map_err(|e| syscall("mmap(UMEM)", e))?;
        let reg = sys::XdpUmemReg {
            addr: umem.base() as u64,
            len: umem.size() as u64,
            chunk_size: c.frame_size,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(f, sys::SOL_XDP, sys::XDP_UMEM_REG, &reg)
            .map_err(|e| syscall("setsockopt(XDP_UMEM_REG)", e))?;
        setsockopt(f, sys::SOL_XDP, sys::XDP_UMEM_FILL_RING, &c.rx_size)
            .map_err(|e| syscall("setsockopt(XDP_UMEM_FILL_RING)", e))?;
        setsockopt(f, sys::SOL_XDP, sys::XDP_UMEM_COMPLETION_RING, &c.tx_size)
            .map_err(|e| syscall("setsockopt(XDP_UMEM_COMPLETION_RING)", e))?;
        setsockopt(f, sys::SOL_XDP, sys::XDP_RX_RING, &c.rx_size)
            .map_err(|e| syscall("setsockopt(XDP_RX_RING)", e))?;
        setsockopt(f, sys::SOL_XDP, sys::XDP_TX_RING, &c.tx_size)
            .map_err(|e| syscall("setsockopt(XDP_TX_RING)", e))?;

        let mut off = sys::XdpMmapOffsets::default();
        let mut len = core::mem::size_of::<sys::XdpMmapOffsets>() as libc::socklen_t;
        // SAFETY: `off` is writable for `len` bytes and `len` is a valid in/out length.
        let rc = unsafe {
            libc::getsockopt(
                f,
                sys::SOL_XDP,
                sys::XDP_MMAP_OFFSETS,
                (&mut off as *mut sys::XdpMmapOffsets).cast(),
                &mut len,
            )
        };
        if rc != 0 || len as usize != core::mem::size_of::<sys::XdpMmapOffsets>() {
            return Err(syscall(
                "getsockopt(XDP_MMAP_OFFSETS)",
                io::Error::last_os_error(),
            ));
        }
        let mut fill = Ring::<u64>::map(f, sys::XDP_UMEM_PGOFF_FILL_RING, &off.fr, c.rx_size, true)
            .map_err(|e| syscall("mmap(fill ring)", e))?;
        let comp = Ring::<u64>::map(
            f,
            sys::XDP_UMEM_PGOFF_COMPLETION_RING,
            &off.cr,
            c.tx_size,
            false,
        )
        .map_err(|e| syscall("mmap(completion ring)", e))?;
        let rx = Ring::<XdpDesc>::map(f, sys::XDP_PGOFF_RX_RING, &off.rx, c.rx_size, false)
            .map_err(|e| syscall("mmap(rx ring)", e))?;
        let tx = Ring::<XdpDesc>::map(f, sys::XDP_PGOFF_TX_RING, &off.tx, c.tx_size, true)
            .map_err(|e| syscall("mmap(tx ring)", e))?;
        // One kick may hand the kernel the whole TX ring (kernel >= 6.17; an older kernel answers
        // ENOPROTOOPT and sends 32 per kick, as before).
        let tx_budget = match setsockopt(f, sys::SOL_XDP, sys::XDP_MAX_TX_SKB_BUDGET, &c.tx_size) {
            Ok(()) => c.tx_size,
            Err(e) => {
                tracing::debug!(port = %c.name, "XDP_MAX_TX_SKB_BUDGET refused ({e}): 32 frames per kick");
                sys::TX_BATCH_SIZE
            }
        };

        // Every receive chunk starts on the fill ring.
        let n = fill.free(c.rx_size);
        debug_assert_eq!(n, c.rx_size);
        for i in 0..n {
            fill.write(i, u64::from(i) * frame as u64);
        }
        fill.submit(n);
        let tx_free: Vec<u64> = (c.rx_size as u64..chunks as u64)
            .rev()
            .map(|k| k * frame as u64)
            .collect();

        // The XDP side first: map, program, attach (until the socket is in the map, the program
        // passes every frame to the stack). A mode the driver lacks thus fails before the socket
        // is bound, and `auto` can fall back without a bound socket in the way.
        let map = bpf::create_xskmap(c.queue + 1)
            .map_err(|e| syscall("bpf(BPF_MAP_CREATE XSKMAP)", e))?;
        let prog = bpf::load_redirect_program(map.as_raw_fd()).map_err(|(source, log)| {
            AfXdpError::ProgramRejected {
                port: c.name.clone(),
                log,
                source,
            }
        })?;
        let attach = |mode: XdpMode| {
            bpf::link_xdp(prog.as_raw_fd(), ifindex, mode_flags(mode)).map_err(|source| {
                AfXdpError::Attach {
                    port: c.name.clone(),
                    interface: c.interface.clone(),
                    mode,
                    source,
                }
            })
        };
        let (link, mode) = match c.mode {
            XdpMode::Auto => match attach(XdpMode::Native) {
                Ok(l) => (l, XdpMode::Native),
                Err(_) => (attach(XdpMode::Skb)?, XdpMode::Skb),
            },
            m => (attach(m)?, m),
        };

        let sxdp = sys::SockaddrXdp {
            family: sys::AF_XDP as u16,
            flags: sys::XDP_COPY | sys::XDP_USE_NEED_WAKEUP,
            ifindex,
            queue_id: c.queue,
            shared_umem_fd: 0,
        };
        // A socket closed just before (a port re-created on reload, a failed open) releases its
        // queue in deferred kernel work: the queue stays busy (EBUSY) for a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            // SAFETY: `sxdp` is a valid sockaddr_xdp and the length is its size.
            let rc = unsafe {
                libc::bind(
                    f,
                    (&sxdp as *const sys::SockaddrXdp).cast(),
                    core::mem::size_of::<sys::SockaddrXdp>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) || std::time::Instant::now() >= deadline {
                return Err(syscall("bind(AF_XDP, copy mode)", e));
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        bpf::xskmap_set(map.as_raw_fd(), c.queue, f)
            .map_err(|e| syscall("bpf(BPF_MAP_UPDATE_ELEM socket into XSKMAP)", e))?;

        if c.busy_poll_us > 0 {
            setsockopt(f, libc::SOL_SOCKET, sys::SO_PREFER_BUSY_POLL, &1i32)
                .map_err(|e| syscall("setsockopt(SO_PREFER_BUSY_POLL)", e))?;
            setsockopt(
                f,
                libc::SOL_SOCKET,
                libc::SO_BUSY_POLL,
                &(c.busy_poll_us as i32),
            )
            .map_err(|e| syscall("setsockopt(SO_BUSY_POLL)", e))?;
            setsockopt(
                f,
                libc::SOL_SOCKET,
                sys::SO_BUSY_POLL_BUDGET,
                &(c.busy_poll_budget as i32),
            )
            .map_err(|e| syscall("setsockopt(SO_BUSY_POLL_BUDGET)", e))?;
        }
        if c.napi_defer_hard_irqs > 0 {
            set_napi_deferral(
                &c.interface,
                c.napi_defer_hard_irqs,
                u64::from(c.gro_flush_timeout_us) * 1000,
            )
            .map_err(|e| {
                syscall(
                    "napi deferral (sysfs napi_defer_hard_irqs, gro_flush_timeout)",
                    e,
                )
            })?;
        }

        let tx_lens = vec![0; c.tx_size as usize];
        let tx_seen = tx.produced();
        let ifstats = IfStatsReader::open()
            .map_err(|e| tracing::warn!(port = %c.name, "no interface counters (netlink): {e}"))
            .ok();
        let if_base = ifstats
            .as_ref()
            .and_then(|r| r.read(ifindex).ok())
            .unwrap_or_default();
        Ok(AfXdpPort {
            ifindex,
            mtu,
            mode,
            _link: link,
            _map: map,
            _prog: prog,
            fill,
            comp,
            rx,
            tx,
            fd,
            ctl,
            umem,
            tx_free,
            tx_lens,
            tx_seen,
            tx_budget,
            napi_id: read_napi_id(f),
            scratch: Vec::new(),
            stats: PortStats::default(),
            extra: AfXdpStats::default(),
            kernel_base: sys::XdpStatistics::default(),
            kernel_retired: sys::XdpStatistics::default(),
            watch: IfWatch::default(),
            netns: NetnsHandle::current(),
            ifstats,
            if_base,
            if_retired: IfKernelStats::default(),
            offload: None,
            config,
        })
    }

    /// Turns the in-kernel cross-connect on (`Some(ifindex)`: every frame the interface receives
    /// is counted and sent out of interface `ifindex` by the XDP program, never reaching the
    /// socket) or off (`None`: the socket's program again). The program is swapped on the port's
    /// BPF link, so frames never find the interface without a program. Needs native XDP: in SKB
    /// mode a failed redirect is counted nowhere. On error the port is as it was.
    pub fn set_offload(&mut self, to: Option<u32>) -> Result<(), RedirectError> {
        let bpf_err = |step: &'static str| {
            move |e: std::io::Error| RedirectError::Bpf {
                step,
                reason: e.to_string(),
            }
        };
        let Some(to) = to else {
            if self.offload.is_some() {
                bpf::link_update(self._link.as_raw_fd(), self._prog.as_raw_fd())
                    .map_err(bpf_err("bpf(BPF_LINK_UPDATE) back to the socket's program"))?;
                self.retire_offload();
            }
            return Ok(());
        };
        if self.mode != XdpMode::Native {
            return Err(RedirectError::NotNative {
                interface: self.config.interface.clone(),
                mode: self.mode.to_string(),
            });
        }
        if self.offload.as_ref().is_some_and(|o| o.to == to) {
            return Ok(());
        }
        let counter =
            bpf::create_counter_map().map_err(bpf_err("bpf(BPF_MAP_CREATE per-CPU counter)"))?;
        let prog =
            bpf::load_count_redirect_program(counter.as_raw_fd(), to).map_err(|(e, log)| {
                RedirectError::Refused {
                    reason: e.to_string(),
                    log,
                }
            })?;
        bpf::link_update(self._link.as_raw_fd(), prog.as_raw_fd())
            .map_err(bpf_err("bpf(BPF_LINK_UPDATE) to the redirect program"))?;
        self.retire_offload();
        self.offload = Some(Offload {
            to,
            to_name: ifname_of(to),
            counter,
            _prog: prog,
            base: (0, 0),
        });
        Ok(())
    }

    /// The in-kernel cross-connect, if on: `(target ifindex, packets, bytes)` since the last
    /// `clear_stats` (these are in `rx_packets`/`rx_bytes` too).
    pub fn offload(&self) -> Option<(u32, u64, u64)> {
        self.offload.as_ref().map(|o| {
            let (p, b) = o.counted().unwrap_or_default();
            (o.to, p, b)
        })
    }

    /// The offload's target interface re-created under its name (a new index): redirect there.
    fn check_offload_target(&mut self) {
        let Some((to, name)) = self
            .offload
            .as_ref()
            .and_then(|o| o.to_name.clone().map(|n| (o.to, n)))
        else {
            return;
        };
        let now = ifreq(
            self.ctl.as_raw_fd(),
            &name,
            libc::SIOCGIFINDEX as libc::c_ulong,
        );
        if let Some(now) = now.and_then(|i| u32::try_from(i).ok()).filter(|&i| i != to) {
            match self.set_offload(Some(now)) {
                Ok(()) => {
                    tracing::info!(port = %self.config.name, "in-kernel cross-connect follows {name:?} to its new ifindex {now}")
                }
                Err(e) => {
                    tracing::warn!(port = %self.config.name, "in-kernel cross-connect not moved to {name:?}'s new ifindex {now}: {e}")
                }
            }
        }
    }

    /// Takes the offload off the port, keeping what its program counted in the port's counters.
    fn retire_offload(&mut self) {
        if let Some(o) = self.offload.take() {
            let (p, b) = o.counted().unwrap_or_else(|e| {
                tracing::warn!(port = %self.config.name, "offload counter unreadable: {e}");
                (0, 0)
            });
            self.stats.rx_packets += p;
            self.stats.rx_bytes += b;
        }
    }

    /// Opens `config.interface` inside the network namespace at `netns` (`/run/netns/NAME` or
    /// `/proc/PID/ns/net`), from a short-lived thread, so the caller keeps its own namespace.
    pub fn open_in_netns(config: AfXdpConfig, netns: &str) -> Result<AfXdpPort, AfXdpError> {
        config.validate()?;
        let netns = netns.to_string();
        std::thread::scope(|s| {
            s.spawn(move || {
                let ns_err = |source| AfXdpError::Netns {
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
                AfXdpPort::open(config)
            })
            .join()
            .expect("open_in_netns thread does not panic")
        })
    }

    /// Frames the kernel sends per kick: the TX ring's size where the kernel took
    /// `XDP_MAX_TX_SKB_BUDGET` (>= 6.17), else its default of 32.
    pub fn tx_budget(&self) -> u32 {
        self.tx_budget
    }

    /// The configuration the port was opened with.
    pub fn config(&self) -> &AfXdpConfig {
        &self.config
    }

    /// The mode the XDP program is attached in: `Native` or `Skb`.
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// The interface's index in its namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// The socket, for poll/epoll: readable when the RX ring holds frames.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Waits up to `timeout` for received frames (`poll(POLLIN)`); returns whether there are.
    pub fn wait_readable(&self, timeout: std::time::Duration) -> io::Result<bool> {
        crate::fd::wait_readable(self.fd.as_raw_fd(), timeout)
    }

    /// The backend's detailed counters.
    pub fn af_xdp_stats(&self) -> AfXdpStats {
        let k = self.kernel_stats();
        let i = self.if_stats();
        AfXdpStats {
            rx_dropped: k.rx_dropped,
            rx_ring_full: k.rx_ring_full,
            rx_fill_ring_empty_descs: k.rx_fill_ring_empty_descs,
            rx_invalid_descs: k.rx_invalid_descs,
            tx_invalid_descs: k.tx_invalid_descs,
            tx_ring_empty_descs: k.tx_ring_empty_descs,
            tx_pending: u64::from(self.tx.produced().wrapping_sub(self.tx_seen)),
            reopened: self.watch.reopened,
            kernel_if_tx_dropped: i.tx_dropped,
            kernel_if_rx_dropped: i.rx_dropped,
            kernel_peer_tx_dropped: i.peer_tx_dropped,
            ..self.extra
        }
    }

    /// The interface's kernel counters since the last `clear_stats`, over this interface and the
    /// ones the port had before (what they had when it left them if the reading fails now).
    fn if_stats(&self) -> IfKernelStats {
        self.ifstats
            .as_ref()
            .and_then(|r| r.read(self.ifindex).ok())
            .map_or(self.if_retired, |now| {
                now.since(&self.if_base, &self.if_retired)
            })
    }

    /// `XDP_STATISTICS` since the last `clear_stats`, over this socket and the ones it replaced.
    fn kernel_stats(&self) -> sys::XdpStatistics {
        let k = read_xdp_statistics(self.fd.as_raw_fd());
        let (b, r) = (&self.kernel_base, &self.kernel_retired);
        let since = |now: u64, base: u64, retired: u64| now.saturating_sub(base) + retired;
        sys::XdpStatistics {
            rx_dropped: since(k.rx_dropped, b.rx_dropped, r.rx_dropped),
            rx_invalid_descs: since(k.rx_invalid_descs, b.rx_invalid_descs, r.rx_invalid_descs),
            tx_invalid_descs: since(k.tx_invalid_descs, b.tx_invalid_descs, r.tx_invalid_descs),
            rx_ring_full: since(k.rx_ring_full, b.rx_ring_full, r.rx_ring_full),
            rx_fill_ring_empty_descs: since(
                k.rx_fill_ring_empty_descs,
                b.rx_fill_ring_empty_descs,
                r.rx_fill_ring_empty_descs,
            ),
            tx_ring_empty_descs: since(
                k.tx_ring_empty_descs,
                b.tx_ring_empty_descs,
                r.tx_ring_empty_descs,
            ),
        }
    }

    /// Looks whether the interface still has the ifindex the socket was bound to (see "Interface
    /// removed" in the module doc): gone → down with the reason; another device under the name →
    /// re-opened on it. (An XDP socket has no `getsockname`; a device re-created under the same
    /// name gets a new ifindex, as the kernel allocates them cyclically.)
    fn check_interface(&mut self) {
        let now = ifreq(
            self.ctl.as_raw_fd(),
            &self.config.interface,
            libc::SIOCGIFINDEX as libc::c_ulong,
        );
        let ifindex = self.ifindex as i32;
        if let Some(now) = self.watch.look(&self.config.interface, ifindex, now, true) {
            ifwatch::reopen(self, now);
        }
    }

    /// Takes transmit chunks back from the completion ring.
    fn reap_completions(&mut self) {
        let n = self.comp.ready(self.config.tx_size);
        for i in 0..n {
            let addr = self.comp.read(i);
            let chunk = addr & !(u64::from(self.config.frame_size) - 1);
            self.tx_free.push(chunk);
        }
        if n > 0 {
            self.comp.release(n);
        }
    }

    /// Counts the frames the kernel has taken off the TX ring since last time.
    fn account_taken(&mut self) {
        let consumed = self.tx.consumed();
        let mask = self.config.tx_size - 1;
        while self.tx_seen != consumed {
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += u64::from(self.tx_lens[(self.tx_seen & mask) as usize]);
            self.tx_seen = self.tx_seen.wrapping_add(1);
        }
    }

    fn kick(&mut self) -> io::Result<()> {
        self.extra.tx_kicks += 1;
        // SAFETY: sendto with a NULL buffer of length 0 on our XDP socket: the documented way to
        // make the kernel process the TX ring (af_xdp.rst, "XDP_USE_NEED_WAKEUP"); nothing is read.
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
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Hands posted frames to the kernel: kicks (when the ring asks for it) until the kernel has
    /// taken every one or makes no progress. Frames still posted afterwards stay for the next call.
    fn flush(&mut self) {
        self.account_taken();
        // Copy mode sends at most `tx_budget` frames per kick; allow a few kicks beyond that that
        // make no progress (EAGAIN while the peer is full) before leaving it to the next call.
        let mut stalls = 0;
        while self.tx_seen != self.tx.produced() && stalls < 4 {
            if !self.tx.needs_wakeup() {
                break;
            }
            let before = self.tx_seen;
            match self.kick() {
                Ok(()) => {}
                Err(e) => match e.raw_os_error() {
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS)
                    | Some(libc::EINTR) => {}
                    _ => {
                        self.extra.tx_kick_errors += 1;
                        break;
                    }
                },
            }
            self.account_taken();
            if self.tx_seen == before {
                stalls += 1;
            }
        }
        self.reap_completions();
    }

    /// Wakes the kernel's receive side (fill ring) when it asked for it or busy polling is on;
    /// returns whether it did (`recvfrom`: a busy poll receives in it).
    fn wake_rx(&mut self) -> bool {
        if self.fill.needs_wakeup() || self.busy_polls() {
            self.extra.rx_wakeups += 1;
            // SAFETY: recvfrom with a NULL buffer of length 0 on our XDP socket: it only drives
            // the kernel's receive processing (af_xdp.rst); nothing is written.
            unsafe {
                libc::recvfrom(
                    self.fd.as_raw_fd(),
                    ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    ptr::null_mut(),
                    ptr::null_mut(),
                );
            }
            return true;
        }
        false
    }

    /// Whether `recvfrom` busy-polls: busy polling is configured and the socket has a NAPI id
    /// (without one the kernel's busy loop polls nothing).
    fn busy_polls(&self) -> bool {
        self.config.busy_poll_us > 0 && self.napi_id != 0
    }

    /// The socket's NAPI id, 0 while the kernel knows none (see the module doc).
    pub fn napi_id(&self) -> u32 {
        self.napi_id
    }

    /// Copies the received frame at `addr`, `len` bytes, into a pool buffer (a chain if longer
    /// than one buffer).
    fn copy_in(&mut self, pool: &mut Pool, addr: u64, len: usize) -> Option<u32> {
        let h = pool.alloc()?;
        let first = len.min(DATA_SIZE);
        let ok = self
            .umem
            .read(addr, &mut pool.raw_mut(h)[HEADROOM..HEADROOM + first]);
        debug_assert!(ok, "range checked by the caller");
        pool.set_len(h, first);
        if len > first {
            self.scratch.resize(len - first, 0);
            let ok = self.umem.read(addr + first as u64, &mut self.scratch);
            debug_assert!(ok, "range checked by the caller");
            for seg in self.scratch.chunks(DATA_SIZE) {
                if !pool.append_segment(h, seg) {
                    pool.free(h);
                    return None;
                }
            }
        }
        Some(h)
    }
}

/// Re-opening on a re-created interface (see "Interface removed under the port"): a new socket,
/// UMEM, rings and XDP program; frames still posted on the old TX ring are counted as dropped
/// ([`AfXdpStats::tx_unsent_dropped`]).
impl ifwatch::Reopen for AfXdpPort {
    type Config = AfXdpConfig;
    type Error = AfXdpError;
    fn config_for_reopen(&self) -> AfXdpConfig {
        self.config.clone()
    }
    fn open_for_reopen(config: AfXdpConfig) -> Result<AfXdpPort, AfXdpError> {
        AfXdpPort::open(config)
    }
    fn watched(&mut self) -> (&mut IfWatch, &mut NetnsHandle, &str) {
        (&mut self.watch, &mut self.netns, &self.config.interface)
    }
    fn hand_over(&mut self, new: &mut AfXdpPort) {
        let offload_to = self.offload.as_ref().map(|o| o.to);
        self.retire_offload();
        if let Some(to) = offload_to {
            // The new interface gets the same in-kernel cross-connect (a re-created *target*
            // interface has a new index: that is the control plane's to redo, module doc).
            if let Err(e) = new.set_offload(Some(to)) {
                tracing::warn!(port = %self.config.name, "in-kernel cross-connect not restored on the re-opened interface: {e}");
            }
        }
        self.account_taken();
        let lost = u64::from(self.tx.produced().wrapping_sub(self.tx_seen));
        self.extra.tx_unsent_dropped += lost;
        self.stats.tx_dropped += lost;
        new.stats = self.stats;
        new.extra = self.extra;
        new.kernel_retired = self.kernel_stats();
        new.if_retired = self.if_stats();
    }
}

impl KernelRedirect for AfXdpPort {
    fn redirect_target(&self) -> Option<u32> {
        (self.mode == XdpMode::Native).then_some(self.ifindex)
    }

    fn set_redirect(&mut self, to: Option<u32>) -> Result<(), RedirectError> {
        self.set_offload(to)
    }
}

impl Port for AfXdpPort {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let max = u32::try_from(max).unwrap_or(u32::MAX);
        let mut n = self.rx.ready(max);
        // Busy polling: poll the receive NAPI whenever the ring holds less than asked for, not
        // only when it is empty — with NAPI deferral nothing else polls it before the watchdog,
        // and the peer's 256-entry ring must not fill meanwhile — and take what the poll received
        // in this call. Otherwise wake the kernel only when the ring is empty and it asked.
        if n < max && (n == 0 || self.busy_polls()) && self.wake_rx() {
            n = self.rx.ready(max);
        }
        if n == 0 {
            return 0;
        }
        let frame = u64::from(self.config.frame_size);
        let umem_len = self.umem.size() as u64;
        let mut got = 0u32;
        let mut recycled = 0u32;
        // Every chunk taken from the rx ring goes back on the fill ring, so take no more than the
        // fill ring has room for. It should have room for all of them (it has a slot per receive
        // chunk), but a debug assertion of that fired once in CI (generator ports reopened on the
        // same veth); writing past the free part would corrupt the ring, so clamp, count it, and
        // leave the rest for the next call.
        let room = self.fill.free(n);
        if room < n {
            self.extra.rx_fill_ring_short += 1;
        }
        let n = n.min(room);
        for i in 0..n {
            let d = self.rx.read(i);
            let chunk = d.addr & !(frame - 1);
            // A descriptor must lie inside one receive chunk; the chunk of a bad one is not ours
            // to recycle (the kernel gave us no valid address), so it is not put back.
            let valid = chunk < u64::from(self.config.rx_size) * frame
                && d.addr + u64::from(d.len) <= chunk + frame
                && d.addr + u64::from(d.len) <= umem_len
                && d.len > 0;
            if !valid {
                self.extra.rx_bad_descriptor += 1;
                self.stats.rx_dropped += 1;
                continue;
            }
            match self.copy_in(pool, d.addr, d.len as usize) {
                Some(h) => {
                    out.push(h);
                    got += 1;
                    self.stats.rx_packets += 1;
                    self.stats.rx_bytes += u64::from(d.len);
                }
                None => {
                    self.extra.rx_no_buffer += 1;
                    self.stats.rx_dropped += 1;
                }
            }
            self.fill.write(recycled, chunk);
            recycled += 1;
        }
        self.rx.release(n);
        self.fill.submit(recycled);
        got as usize
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        if self.watch.is_down() {
            // The socket has no device: a posted frame would sit on the ring until the re-open.
            self.extra.tx_unsent_dropped += pkts.len() as u64;
            self.stats.tx_dropped += pkts.len() as u64;
            return 0;
        }
        self.reap_completions();
        let frame = self.config.frame_size as usize;
        let room = (self.tx.free(pkts.len() as u32) as usize).min(self.tx_free.len());
        let mask = self.config.tx_size - 1;
        let mut posted = 0u32;
        for (i, &h) in pkts.iter().enumerate() {
            let len = pool.header(h).total_len as usize;
            let d = pool.data(h);
            let q_tagged = d.len() >= ETH_HLEN && d[12..14] == [0x81, 0x00];
            let mtu_max = self.mtu + ETH_HLEN + if q_tagged { VLAN_TAG } else { 0 };
            if len == 0 || len > frame || len > mtu_max {
                self.extra.tx_too_long += 1;
                self.stats.tx_dropped += 1;
                continue;
            }
            if posted as usize == room {
                let left = (pkts.len() - i) as u64;
                self.extra.tx_ring_full += left;
                self.stats.tx_dropped += left;
                break;
            }
            let addr = self.tx_free.pop().expect("room <= tx_free.len()");
            let mut at = 0;
            for seg in pool.segments(h) {
                let n = seg.len().min(len - at);
                let ok = self.umem.write(addr + at as u64, &seg[..n]);
                debug_assert!(ok, "a free transmit chunk holds frame_size bytes");
                at += n;
            }
            self.tx.write(
                posted,
                XdpDesc {
                    addr,
                    len: len as u32,
                    options: 0,
                },
            );
            self.tx_lens[(self.tx.produced().wrapping_add(posted) & mask) as usize] = len as u32;
            posted += 1;
        }
        if posted > 0 {
            self.tx.submit(posted);
        }
        self.flush();
        posted as usize
    }

    fn poll_control(&mut self) {
        if self.watch.due() {
            self.check_interface();
            self.check_offload_target();
        }
        // The kernel records the NAPI id from the first frame the socket receives.
        if self.config.busy_poll_us > 0 && self.napi_id == 0 {
            self.napi_id = read_napi_id(self.fd.as_raw_fd());
        }
        // Idle flush: frames the peer could not take during the last burst go out now.
        self.flush();
    }

    fn stats(&self) -> PortStats {
        let k = self.kernel_stats();
        let mut s = self.stats;
        if let Some((_, p, b)) = self.offload() {
            s.rx_packets += p;
            s.rx_bytes += b;
            // A frame the program redirected that the kernel could not send on is counted by
            // the receiving interface (veth: `rx_drops` → `rx_dropped`, drivers/net/veth.c).
            s.rx_dropped += self.if_stats().rx_dropped;
        }
        s.rx_dropped += k.rx_dropped + k.rx_ring_full + k.rx_invalid_descs;
        // The kernel takes an invalid descriptor off the TX ring without sending it: it was
        // counted as taken (sent), it is a drop.
        s.tx_packets = s.tx_packets.saturating_sub(k.tx_invalid_descs);
        s.tx_dropped += k.tx_invalid_descs;
        // Frames the interface dropped after the socket let them go (crate::ifstats): taken by
        // the kernel, never sent.
        let i = self.if_stats();
        s.tx_packets = s.tx_packets.saturating_sub(i.tx_dropped);
        s.tx_dropped += i.tx_dropped;
        s
    }

    fn clear_stats(&mut self) {
        self.kernel_base = read_xdp_statistics(self.fd.as_raw_fd());
        self.kernel_retired = sys::XdpStatistics::default();
        self.if_base = self
            .ifstats
            .as_ref()
            .and_then(|r| r.read(self.ifindex).ok())
            .unwrap_or_default();
        self.if_retired = IfKernelStats::default();
        self.stats = PortStats::default();
        self.extra = AfXdpStats::default();
        self.watch.reopened = 0;
        if let Some(o) = self.offload.as_mut() {
            o.base = bpf::read_counter(o.counter.as_raw_fd()).unwrap_or(o.base);
        }
    }

    fn kernel_redirect(&mut self) -> Option<&mut dyn KernelRedirect> {
        Some(self)
    }

    /// Down while the interface is gone or its name stands for another device than the one the
    /// socket is bound to (not re-opened yet), else the interface's `IFF_UP | IFF_RUNNING`.
    fn link(&self) -> LinkState {
        let index = ifreq(
            self.ctl.as_raw_fd(),
            &self.config.interface,
            libc::SIOCGIFINDEX as libc::c_ulong,
        );
        if self.watch.is_down() || index != Some(self.ifindex as i32) {
            return LinkState::Down;
        }
        match ifreq(
            self.ctl.as_raw_fd(),
            &self.config.interface,
            libc::SIOCGIFFLAGS as libc::c_ulong,
        ) {
            Some(flags) if flags & libc::IFF_UP != 0 && flags & libc::IFF_RUNNING != 0 => {
                LinkState::Up
            }
            _ => LinkState::Down,
        }
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        let k = self.af_xdp_stats();
        vec![
            ("kernel-rx-ring-full", k.rx_ring_full),
            ("kernel-fill-ring-empty", k.rx_fill_ring_empty_descs),
            ("kernel-rx-invalid-descs", k.rx_invalid_descs),
            ("kernel-tx-invalid-descs", k.tx_invalid_descs),
            (crate::KERNEL_INTERFACE_TX_DROPPED, k.kernel_if_tx_dropped),
            ("kernel-peer-tx-dropped", k.kernel_peer_tx_dropped),
            // Offloaded only: frames the XDP program redirected that the kernel could not send
            // on (veth counts them in the receiving device's rx_dropped).
            (
                "kernel-xdp-redirect-failed",
                if self.offload.is_some() {
                    k.kernel_if_rx_dropped
                } else {
                    0
                },
            ),
            ("rx-bad-descriptor", k.rx_bad_descriptor),
            ("rx-no-buffer", k.rx_no_buffer),
            ("rx-fill-ring-short", k.rx_fill_ring_short),
            ("tx-ring-full", k.tx_ring_full),
            ("tx-too-long", k.tx_too_long),
            ("tx-kick-errors", k.tx_kick_errors),
            ("tx-unsent-dropped", k.tx_unsent_dropped),
            ("interface-re-opened", k.reopened),
        ]
    }

    fn describe(&self) -> String {
        let k = self.af_xdp_stats();
        let offload = match &self.offload {
            None => String::new(),
            Some(o) => match o.counted() {
                Ok((p, b)) => format!(
                    "OFFLOADED in-kernel xconnect: xdp redirect to ifindex {} ({p} frames, {b} bytes) | ",
                    o.to
                ),
                Err(e) => format!(
                    "OFFLOADED in-kernel xconnect: xdp redirect to ifindex {} (counter unreadable: {e}) | ",
                    o.to
                ),
            },
        };
        format!(
            "{offload}af_xdp {} ifindex {} queue {} xdp {} copy need-wakeup rx {} tx {} chunks of {} tx budget {}{}{} \
             | xdp rx_dropped {} rx_ring_full {} rx_fill_ring_empty_descs {} tx_ring_empty_descs {} \
             | interface tx_dropped {} rx_dropped {} peer tx_dropped {} | tx kicks {} rx wake-ups {} napi id {}{}",
            self.config.interface,
            self.ifindex,
            self.config.queue,
            self.mode,
            self.config.rx_size,
            self.config.tx_size,
            self.config.frame_size,
            self.tx_budget,
            if self.config.busy_poll_us > 0 {
                format!(" busy-poll {} us", self.config.busy_poll_us)
            } else {
                String::new()
            },
            if self.config.napi_defer_hard_irqs > 0 {
                format!(
                    " napi-defer {} gro-flush-timeout {} us",
                    self.config.napi_defer_hard_irqs, self.config.gro_flush_timeout_us
                )
            } else {
                String::new()
            },
            k.rx_dropped,
            k.rx_ring_full,
            k.rx_fill_ring_empty_descs,
            k.tx_ring_empty_descs,
            k.kernel_if_tx_dropped,
            k.kernel_if_rx_dropped,
            k.kernel_peer_tx_dropped,
            k.tx_kicks,
            k.rx_wakeups,
            self.napi_id,
            self.watch.describe(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(c: AfXdpConfig) -> &'static str {
        match c.validate() {
            Err(AfXdpError::Config { field, .. }) => field,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    /// NAPI deferral is accepted only with busy polling and with both settings: the error names
    /// the field, its value and what is accepted.
    #[test]
    fn napi_deferral_needs_busy_polling_and_both_settings() {
        let base = AfXdpConfig::new("p", "veth0");
        let ok = AfXdpConfig {
            busy_poll_us: 20,
            napi_defer_hard_irqs: 2,
            gro_flush_timeout_us: 200,
            ..base.clone()
        };
        ok.validate().expect("busy polling with deferral");
        let no_busy = AfXdpConfig {
            busy_poll_us: 0,
            ..ok.clone()
        };
        assert_eq!(field(no_busy.clone()), "napi_defer_hard_irqs");
        let msg = no_busy.validate().unwrap_err().to_string();
        assert!(msg.contains("busy_poll_us > 0"), "{msg}");
        let no_timeout = AfXdpConfig {
            gro_flush_timeout_us: 0,
            ..ok.clone()
        };
        assert_eq!(field(no_timeout), "gro_flush_timeout_us");
        let no_defer = AfXdpConfig {
            napi_defer_hard_irqs: 0,
            ..ok.clone()
        };
        assert_eq!(field(no_defer), "gro_flush_timeout_us");
        let too_many = AfXdpConfig {
            napi_defer_hard_irqs: 101,
            ..ok.clone()
        };
        assert_eq!(field(too_many), "napi_defer_hard_irqs");
        let too_long = AfXdpConfig {
            gro_flush_timeout_us: 10_001,
            ..ok
        };
        assert_eq!(field(too_long), "gro_flush_timeout_us");
        base.validate()
            .expect("the defaults leave the device alone");
    }
}
