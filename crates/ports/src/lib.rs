//! Ports: the [`Port`] trait and its backends.
//!
//! - [`memif`]: shared-memory interface, wire-compatible with DPDK's `net_memif` and VPP's memif
//!   (server and client roles, Unix control socket, shared rings).
//! - [`af_packet`]: any kernel interface through an AF_PACKET socket with TPACKET_V3 mmap rings.
//! - [`af_xdp`]: any kernel interface through an AF_XDP socket (UMEM, four rings, an XDP program
//!   loaded without libbpf).
//! - [`vhost_user`]: a vhost-user virtio-net backend for QEMU guests and DPDK's `net_virtio_user`
//!   (server and client roles, guest memory mapped from the frontend's descriptors).
//! - [`loopback`]: an in-process port pair for tests and benchmarks.
//! - [`pcap`]: a wrapper around any port that writes what it receives and sends to a pcap file.
//! - [`fault`]: a wrapper around any port that injects loss, corruption and reordering (seeded).
//! - [`shm`]: [`shm::ShmRegion`], memory shared with another party (kernel rings), with every
//!   volatile, bounds-checked access in one place.
//! - [`heap`]: giving freed heap memory back to the kernel after a large control-plane change.
//!
//! A port moves packets between its medium and the [`Pool`]: `rx_burst` allocates buffers and fills
//! them, `tx_burst` copies packets out. The caller keeps ownership of the handles passed to
//! `tx_burst` and frees them afterwards, sent or not; what could not be sent is counted by the port
//! as `tx_dropped`. This is the only crate (with the buffer pool) allowed `unsafe`, for sockets and
//! shared memory, each block with a `// SAFETY:` comment.

pub mod af_packet;
pub mod af_xdp;
pub mod fault;
mod fd;
pub mod heap;
pub mod ifstats;
mod ifwatch;
pub mod loopback;
pub mod memif;
pub mod pcap;
pub mod shm;
pub mod testing;
pub mod vhost_user;

use serde::{Deserialize, Serialize};
use vecswitch_buffer::Pool;

/// The [`Port::error_counters`] name of frames the port's kernel interface dropped after the port
/// had handed them over (a veth whose peer's receive queue was full): sent by the port, never on
/// the wire. A sender that re-sends such frames (AF_PACKET) names its counter differently, since
/// nothing is lost there.
pub const KERNEL_INTERFACE_TX_DROPPED: &str = "kernel-interface-tx-dropped";

/// Counters every port keeps, as `show ports` prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// Frames the port could not take in (no buffer, bad descriptor, ring error).
    pub rx_dropped: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Frames handed to `tx_burst` that the port could not send (ring full, link down).
    pub tx_dropped: u64,
}

/// How full a port's receive ring has been: its size and the most entries it held when the worker
/// polled it, since the counters were cleared. A peak equal to the size means the ring was full at
/// a poll, and whatever the peer sent meanwhile was refused (memif) or dropped (kernel rings): the
/// worker stayed away longer than the ring holds, which `show runtime`'s poll gaps then show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RingFill {
    /// Entries in the ring: memif slots; AF_PACKET blocks (block mode: a block holds many frames
    /// and is handed over whole, full or at its retire timeout) or slots (frame mode).
    pub size: u32,
    /// Most entries waiting at one poll.
    pub peak: u32,
    /// Entries waiting at the latest poll.
    #[serde(default)]
    pub last: u32,
    /// Polls that found the ring full (the peer may have been refused before each).
    #[serde(default)]
    pub full_polls: u64,
}

/// Link state of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinkState {
    Up,
    Down,
}

/// A packet port.
pub trait Port: Send {
    /// The port's name, as the config and `show ports` use it.
    fn name(&self) -> &str;
    /// Receives up to `max` packets: allocates buffers from `pool`, fills them, appends their handles
    /// to `out`. Returns the number received. Sets `rx_port` is the caller's job.
    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize;
    /// Sends `pkts` (copying them out); returns how many were sent. The caller still owns and frees
    /// every handle.
    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize;
    /// Housekeeping outside the fast path: accept or retry connections, handle peer messages.
    /// Called by the worker between bursts at a low rate; never blocks.
    fn poll_control(&mut self) {}
    /// Counters since the port was created or last cleared.
    fn stats(&self) -> PortStats;
    /// Zeroes the counters.
    fn clear_stats(&mut self);
    /// Whether packets can flow now.
    fn link(&self) -> LinkState;
    /// The receive ring's size and peak occupancy at a poll since the counters were cleared
    /// ([`RingFill`]); `None` for a backend that cannot see its ring (or has none connected).
    fn rx_ring(&self) -> Option<RingFill> {
        None
    }
    /// How an idle worker may wait for this port's next frame instead of polling it
    /// ([`RxWait`]); the default, [`RxWait::Poll`], keeps the worker polling.
    fn rx_wait(&self) -> RxWait<'_> {
        RxWait::Poll
    }
    /// A one-line description of the backend and its state (for `show ports`).
    fn describe(&self) -> String {
        String::new()
    }
    /// The backend's own loss and event counters as `(reason, count)`, for `show errors`: every
    /// frame the port lost is in one of them (reasons are kebab-case; zero counts may be listed).
    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// The MAC address the port's config gave it, if any: the switch takes it as the main
    /// interface's MAC (otherwise the interface keeps one made from its index).
    fn configured_mac(&self) -> Option<[u8; 6]> {
        None
    }
    /// The port's in-kernel forwarding (an offloaded `[[xconnect]]`), if it has that capability
    /// (an AF_XDP port); the default: none.
    fn kernel_redirect(&mut self) -> Option<&mut dyn KernelRedirect> {
        None
    }
}

/// A port's capability to have the kernel forward its frames (an offloaded `[[xconnect]]`),
/// declared by the port through [`Port::kernel_redirect`].
pub trait KernelRedirect {
    /// The index of the kernel interface that frames another port redirects to this one are sent
    /// out of, if this port can be the target of such a redirect now (an AF_XDP port: its
    /// interface, in native XDP mode).
    fn redirect_target(&self) -> Option<u32>;
    /// Makes the kernel send every frame this port's interface receives out of interface `to`
    /// (an index from [`KernelRedirect::redirect_target`] of a port in the same network
    /// namespace), counting them in the port's `rx_packets`, without handing them to the port;
    /// `None` hands them to the port again. On error the port is unchanged.
    fn set_redirect(&mut self, to: Option<u32>) -> Result<(), RedirectError>;
}

/// Why [`KernelRedirect::set_redirect`] failed (the port is unchanged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedirectError {
    /// The port's XDP mode cannot redirect: in SKB mode a failed redirect is counted nowhere.
    #[error(
        "interface {interface:?} has XDP in mode {mode} (an in-kernel cross-connect needs native \
         XDP: mode = \"native\", or \"auto\" on a driver with XDP)"
    )]
    NotNative {
        /// The kernel interface.
        interface: String,
        /// Its XDP mode.
        mode: String,
    },
    /// A `bpf(2)` step failed: `step` names it (`bpf(BPF_LINK_UPDATE) to the redirect program`).
    #[error("{step}: {reason}")]
    Bpf {
        step: &'static str,
        /// The kernel's error.
        reason: String,
    },
    /// The kernel's verifier refused the redirect program.
    #[error("the kernel refused the redirect program: {reason}: {log}")]
    Refused {
        reason: String,
        /// The verifier's log.
        log: String,
    },
}

/// What an idle worker may wait on for a port's next frame ([`Port::rx_wait`]), so that an idle
/// switch sleeps in `poll(2)` instead of polling: VPP's interrupt-mode rx queues, DPDK's
/// `rte_eth_dev_rx_intr_enable` with `rte_epoll_wait`.
#[derive(Debug, Clone, Copy)]
pub enum RxWait<'a> {
    /// Readable when frames (or control messages) arrive: the peer signals it, e.g. a memif
    /// link in interrupt mode (the ring's eventfd, written by the peer after it enqueues).
    Fd(std::os::fd::BorrowedFd<'a>),
    /// Nothing can arrive until the port's housekeeping ([`Port::poll_control`]) makes a link:
    /// the worker's periodic wake is enough.
    Nothing,
    /// Frames may arrive unannounced: the port must be polled.
    Poll,
}

impl Port for Box<dyn Port> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn rx_wait(&self) -> RxWait<'_> {
        (**self).rx_wait()
    }
    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        (**self).rx_burst(pool, out, max)
    }
    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        (**self).tx_burst(pool, pkts)
    }
    fn poll_control(&mut self) {
        (**self).poll_control()
    }
    fn stats(&self) -> PortStats {
        (**self).stats()
    }
    fn clear_stats(&mut self) {
        (**self).clear_stats()
    }
    fn link(&self) -> LinkState {
        (**self).link()
    }
    fn rx_ring(&self) -> Option<crate::RingFill> {
        (**self).rx_ring()
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        (**self).error_counters()
    }
    fn configured_mac(&self) -> Option<[u8; 6]> {
        (**self).configured_mac()
    }
    fn kernel_redirect(&mut self) -> Option<&mut dyn KernelRedirect> {
        (**self).kernel_redirect()
    }
}
