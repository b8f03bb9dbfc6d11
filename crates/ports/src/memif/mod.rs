//! memif: a shared-memory packet interface, wire-compatible with DPDK's `net_memif` and VPP's
//! memif (protocol version 2.0), in copy mode.
//!
//! Main types: [`MemifConfig`] (validated by [`MemifPort::new`]), [`MemifPort`] (the [`Port`]),
//! [`MemifErrors`] (drop reasons of the data path). Inside: `msg` (the 128-byte control messages),
//! `sys` (sockets with SCM_RIGHTS, memfd, eventfd, mappings — the `unsafe` OS side), `ring` (ring
//! layout, volatile/atomic access, descriptor bounds checks, copy to and from the [`Pool`]) and
//! `listener` (one server socket shared by several interface ids).
//!
//! # Roles
//!
//! A connection has a **server** (called "master" in older memif documents) and a **client**
//! ("slave"). The server listens on the control socket; the client connects, and the client
//! *creates the shared memory*: one memfd region holding both rings and all packet buffers, passed
//! to the server with ADD_REGION (SCM_RIGHTS), and one eventfd per ring passed with ADD_RING. The
//! handshake (DPDK `memif_socket.c`, VPP `memif/socket.c`):
//!
//! ```text
//! server → HELLO (versions, limits)        client → INIT (version, interface id, secret)
//! server → ACK                             client → ADD_REGION + memfd
//! server → ACK                             client → ADD_RING (client→server) + eventfd
//! server → ACK                             client → ADD_RING (server→client) + eventfd
//! server → ACK                             client → CONNECT
//! server → CONNECTED                       either → DISCONNECT (reason) at any time
//! ```
//!
//! The client sends its next message when the server acknowledges the previous one. One server
//! socket serves several interfaces told apart by the INIT's interface **id**: two server ports on
//! the same `socket_path` with ids 0 and 1 share one listening socket (e.g. the two memif ports of a
//! PVP topology). A client with no server to talk to retries every 250 ms; a connection that fails
//! or is disconnected is torn down completely (mappings unmapped, descriptors closed) and the port
//! goes back to listening / retrying. All of this happens in [`Port::poll_control`], which never
//! blocks; [`Port::link`] is `Up` only while connected.
//!
//! The client builds its region (memfd, mapping with every page faulted in, descriptors written)
//! on the process's memif setup thread (started with the first memif port), at ordinary priority
//! and off the worker's CPU, and the handshake goes on when it is ready; a connection that ends is
//! unmapped and closed there too. At 4,096 slots a region is 16 MiB: building it on the worker
//! stopped every other port for 19–26 ms, and releasing it for 2–7 ms (docs/BENCHMARKS.md §14),
//! longer than a ring holds at 1 Mfps. A server maps the client's region there too (its pages
//! exist already, but `MAP_POPULATE` still writes a page-table entry for every 4 KiB of it and
//! holds the address space's lock meanwhile: 1.4–1.6 ms at 4,096 slots on the worker), and sends
//! the region's ACK when the mapping is ready.
//!
//! # Socket naming
//!
//! `socket_path` is a filesystem path (`/run/vecswitch/memif.sock`), or, starting with `@`, an
//! abstract Unix socket name (`@vecswitch` is `\0vecswitch`, with no trailing NUL, as DPDK's
//! `socket-abstract=yes` and VPP's `abstract:vecswitch` spell it). A stale socket file that nobody
//! listens on is replaced; the file is removed when the last server port on it is dropped.
//!
//! # Modes
//!
//! - **Polling** (default): the receiving side sets `MEMIF_RING_FLAG_MASK_INT` on its ring, so the
//!   peer never writes the eventfd; `rx_burst` just looks at the ring.
//! - **Interrupt**: the receive ring is left unmasked; the peer kicks the ring's eventfd after each
//!   burst it sends. [`MemifPort::rx_event_fd`] exposes it so a worker can sleep in `poll(2)`/epoll
//!   until traffic arrives (`rx_burst` drains it). Transmit kicks the peer's eventfd whenever the
//!   peer's ring is not masked — whatever our own mode.
//!
//! # Data path (copy mode)
//!
//! Ring semantics and memory ordering are described in the `ring` module. Frames longer than one
//! memif buffer (`buffer_size`, default 2048) use chained descriptors (`MEMIF_DESC_FLAG_NEXT`) in
//! both directions; received chains become chained Pool packets. Descriptors come from the other
//! process and are never trusted: each is checked against the regions before a byte is copied, and
//! a bad one drops its packet with a named reason ([`MemifErrors`]), counted in `rx_dropped`.
//!
//! # Peer quirks handled
//!
//! DPDK before 26.03 (Debian 12 ships 22.11) never clears `MEMIF_DESC_FLAG_NEXT` in descriptors it
//! transmits into, so a slot that once held a chain would glue later frames together. Our receive
//! side hands every consumed slot back with its flags cleared (server), or re-posts it with flags 0
//! (client), which keeps such peers correct.
//!
//! # Interoperating with DPDK testpmd
//!
//! We are the server, testpmd the client (abstract sockets are DPDK's default; `socket-abstract=no`
//! makes it use the path):
//!
//! ```text
//! dpdk-testpmd -l 0,1 --no-huge -m 1024 --no-pci --iova-mode=va --file-prefix=vs1 \
//!   --vdev=net_memif0,role=client,socket=/tmp/vs.sock,socket-abstract=no,id=0 \
//!   -- --total-num-mbufs=32768 --forward-mode=rxonly -a
//! ```
//!
//! We are the client, testpmd the server (`role=server`), e.g. generating 60-byte frames:
//!
//! ```text
//! dpdk-testpmd -l 0,1 --no-huge -m 1024 --no-pci --iova-mode=va --file-prefix=vs2 \
//!   --vdev=net_memif0,role=server,socket=/tmp/vs.sock,socket-abstract=no,id=0 \
//!   -- --total-num-mbufs=32768 --forward-mode=txonly --txpkts=60 -a
//! ```
//!
//! testpmd needs two lcores (`-l 0,1`: main + one forwarding core; `-l 1` alone exits with "No
//! cores defined for forwarding"). For an abstract socket drop `socket-abstract=no` and give
//! `socket=NAME`, which our `@NAME` reaches. In `io` forwarding add `--no-flush-rx`, or testpmd
//! discards what is already waiting in its receive ring when `start` runs.
//!
//! Use `-i` instead of `-a` to drive testpmd from stdin (`start`, `show port stats all`, `stop`,
//! `quit`); memif statistics reset when the peer disconnects, so read them before stopping the peer.
//! The tests in `crates/ports/tests/memif_testpmd.rs` run both.

mod listener;
pub mod msg;
pub mod ring;
mod sys;

pub use ring::MemifErrors;

use crate::{LinkState, Port, PortStats};
use msg::{Msg, MSG_SIZE};
use ring::{ClientBuffers, RingRef, RxQueue, Side, TxQueue};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use sys::{Recv, Region, SockAddr};
use vecswitch_buffer::Pool;

/// Which end of the memif connection this port is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Listens on the socket; maps the client's memory.
    #[default]
    Server,
    /// Connects to the socket; creates the shared memory.
    Client,
}

/// How the receive side learns about new packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The peer is asked not to kick; the worker polls the ring.
    #[default]
    Polling,
    /// The peer kicks the ring's eventfd; see [`MemifPort::rx_event_fd`].
    Interrupt,
}

/// Configuration of one memif port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemifConfig {
    /// Port name (also sent to the peer as our interface name).
    pub name: String,
    /// Control socket: a filesystem path, or an abstract name when it starts with `@`.
    pub socket_path: String,
    /// Interface id on the socket.
    pub id: u32,
    pub role: Role,
    /// log2 of descriptors per ring, 8..=14. A server advertises it as the maximum; the client
    /// uses the smaller of its own and the server's.
    pub ring_size_log2: u8,
    /// Bytes per shared packet buffer (client side; a server uses what the client posts).
    pub buffer_size: u32,
    /// Queue pairs. Only 1 is supported.
    pub num_queues: u16,
    pub mode: Mode,
    /// Secret the client presents / the server requires (at most 24 bytes).
    pub secret: Option<String>,
    /// The interface's MAC address; `None` = `02:fe:` followed by the id.
    pub mac: Option<[u8; 6]>,
}

/// Accepted `ring_size_log2` values.
pub const RING_SIZE_LOG2_RANGE: std::ops::RangeInclusive<u8> = 8..=14;
/// Accepted `buffer_size` values.
pub const BUFFER_SIZE_RANGE: std::ops::RangeInclusive<u32> = 128..=65535;
/// Default `buffer_size` (as DPDK and VPP).
pub const DEFAULT_BUFFER_SIZE: u32 = 2048;
/// Default `ring_size_log2` (1024 descriptors, as DPDK and VPP).
pub const DEFAULT_RING_SIZE_LOG2: u8 = 10;

impl MemifConfig {
    /// A config with the defaults: ring 2^10, buffers of 2048 bytes, one queue pair, polling, no
    /// secret, generated MAC.
    pub fn new(name: &str, socket_path: &str, id: u32, role: Role) -> MemifConfig {
        MemifConfig {
            name: name.to_string(),
            socket_path: socket_path.to_string(),
            id,
            role,
            ring_size_log2: DEFAULT_RING_SIZE_LOG2,
            buffer_size: DEFAULT_BUFFER_SIZE,
            num_queues: 1,
            mode: Mode::Polling,
            secret: None,
            mac: None,
        }
    }

    /// Checks every field; the error names the field, the value and what is accepted.
    pub fn validate(&self) -> Result<(), MemifError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(MemifError::InvalidConfig {
                field,
                value,
                accepted,
            })
        };
        if self.name.is_empty() {
            return bad("name", "\"\"".into(), "a non-empty name");
        }
        let sock_len = self.socket_path.len();
        if self.socket_path.is_empty()
            || self.socket_path == "@"
            || sock_len > sys::MAX_SOCKET_PATH
            || self.socket_path.contains('\0')
        {
            return bad(
                "socket_path",
                format!("{:?}", self.socket_path),
                "a path or @abstract-name of 1..=107 bytes without NUL",
            );
        }
        if !RING_SIZE_LOG2_RANGE.contains(&self.ring_size_log2) {
            return bad(
                "ring_size_log2",
                self.ring_size_log2.to_string(),
                "8..=14 (256..=16384 descriptors)",
            );
        }
        if !BUFFER_SIZE_RANGE.contains(&self.buffer_size) {
            return bad(
                "buffer_size",
                self.buffer_size.to_string(),
                "128..=65535 bytes",
            );
        }
        if self.num_queues != 1 {
            return bad(
                "num_queues",
                self.num_queues.to_string(),
                "1 (one queue pair)",
            );
        }
        if let Some(s) = &self.secret {
            if s.is_empty() || s.len() > msg::SECRET_SIZE || s.contains('\0') {
                return bad("secret", format!("{s:?}"), "1..=24 bytes without NUL");
            }
        }
        Ok(())
    }
}

/// Errors creating a memif port.
#[derive(Debug, thiserror::Error)]
pub enum MemifError {
    #[error("memif config: {field} = {value} is not accepted; accepted: {accepted}")]
    InvalidConfig {
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error("memif socket {socket}: interface id {id} is already served by port {other:?}")]
    DuplicateId {
        socket: String,
        id: u32,
        other: String,
    },
    #[error("memif socket {socket}: {source}")]
    Socket {
        socket: String,
        #[source]
        source: io::Error,
    },
}

/// Connection state, as [`MemifPort::state`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemifState {
    /// Server waiting for a client / client waiting to retry.
    Idle,
    /// Handshake in progress.
    Connecting,
    Connected,
}

/// Highest region index a server accepts (16 regions).
const MAX_REGION_INDEX: u16 = 15;
/// How long a handshake may take. Generous: a peer's control messages are handled by a thread
/// that a loaded host starves (DPDK's interrupt thread took 5 s+ at load 19), and giving up
/// mid-handshake costs more than waiting — the peer sees a broken pipe, and DPDK 22.11's memif
/// server then panics in its interrupt thread (`epoll_ctl ... Bad file descriptor`). A peer
/// that never answers still only holds its own connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// Delay between a client's connection attempts.
const RETRY_INTERVAL: Duration = Duration::from_millis(250);
/// Messages read per `poll_control` call per connection (bounded work, never blocks).
const MAX_MSGS_PER_POLL: usize = 16;

/// Which descriptor a queued client message carries.
#[derive(Debug, Clone, Copy)]
enum Attach {
    None,
    Region,
    C2sEvent,
    S2cEvent,
}

/// A live (or being built) connection's resources. Dropping it closes and unmaps everything.
#[derive(Debug)]
struct Link {
    sock: OwnedFd,
    regions: Vec<Region>,
    /// Ring locations and eventfds, by direction.
    c2s: Option<(RingRef, OwnedFd)>,
    s2c: Option<(RingRef, OwnedFd)>,
    peer_name: String,
    since: Instant,
}

#[derive(Debug)]
struct Connected {
    link: Link,
    rx: RxQueue,
    tx: TxQueue,
    peer_if_name: String,
}

#[derive(Debug)]
enum State {
    Idle {
        next_try: Instant,
    },
    /// Server: INIT accepted, receiving regions and rings; with a region being mapped off the
    /// worker (`Some`), whose ACK is sent when the mapping is ready.
    ServerHandshake(Link, Option<Mapping>),
    /// Client: waiting for HELLO, then (`building`) for the region built off the worker.
    ClientHello {
        sock: OwnedFd,
        since: Instant,
        building: Option<Building>,
    },
    /// Client: sending INIT.. CONNECT one per ACK, then waiting for CONNECTED.
    ClientHandshake {
        link: Link,
        queue: VecDeque<(Msg, Attach)>,
        log2: u8,
    },
    Connected(Box<Connected>),
}

/// A client's region being built on its own thread (module doc), for the ring size HELLO allowed.
#[derive(Debug)]
struct Building {
    done: std::sync::mpsc::Receiver<io::Result<ClientRings>>,
    log2: u8,
    peer: String,
}

/// A peer's region being mapped on the setup thread, for a server.
#[derive(Debug)]
struct Mapping {
    done: std::sync::mpsc::Receiver<io::Result<Region>>,
}

/// A peer's region for a server to map: its memory file and the size the peer announced.
struct MapJob {
    fd: OwnedFd,
    size: u64,
    done: std::sync::mpsc::Sender<io::Result<Region>>,
}

/// A region for a client to build: ring size, buffer size, and where to send it.
struct RegionJob {
    log2: u8,
    bsize: u32,
    done: std::sync::mpsc::Sender<io::Result<ClientRings>>,
}

/// Work for the setup thread.
enum SetupJob {
    /// Build a client's region.
    Build(RegionJob),
    /// Map a peer's region (server).
    Map(MapJob),
    /// Drop a finished connection: unmap its regions, close its descriptors.
    Release(Box<State>),
}

/// The process's one memif setup thread, started by the first memif port: it builds client
/// regions (module doc) and releases torn-down connections, at ordinary priority and off the
/// worker's CPU. One thread for the process, started with the port rather than per handshake:
/// spawning a thread maps its stack, an `mmap` waits for the address space's lock, and the worker
/// would wait with it while a region was being faulted in.
fn setup_thread() -> std::sync::mpsc::Sender<SetupJob> {
    static SETUP: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<SetupJob>>> =
        std::sync::OnceLock::new();
    let tx = SETUP.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<SetupJob>();
        let spawned = std::thread::Builder::new()
            .name("memif-setup".into())
            .spawn(move || {
                sys::leave_worker_cpu();
                for job in rx {
                    match job {
                        // The port may have given up meanwhile: then the rings are unmapped here.
                        SetupJob::Build(j) => {
                            let _ = j.done.send(build_client_rings(j.log2, j.bsize));
                        }
                        SetupJob::Map(j) => {
                            let _ = j.done.send(Region::map(j.fd, j.size));
                        }
                        SetupJob::Release(state) => drop(state),
                    }
                }
            });
        if let Err(e) = spawned {
            // Jobs sent to a receiver that is gone fail: a build says so (on_hello), a release
            // is done by the sender.
            tracing::warn!(error = %e, "memif: cannot start the setup thread");
        }
        Mutex::new(tx)
    });
    tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// What a client builds before INIT: the region, its two rings written, and their eventfds.
#[derive(Debug)]
struct ClientRings {
    regions: Vec<Region>,
    c2s: (RingRef, OwnedFd),
    s2c: (RingRef, OwnedFd),
}

/// A memif port (see the module documentation).
#[derive(Debug)]
pub struct MemifPort {
    cfg: MemifConfig,
    listener: Option<Arc<Mutex<listener::Listener>>>,
    state: State,
    stats: PortStats,
    errors: MemifErrors,
    connects: u64,
    last_disconnect: Option<String>,
    /// `errors.bad_ring_index` when `poll_control` last looked.
    bad_index_seen: u64,
    /// Most receive descriptors waiting at one `rx_burst` since the counters were cleared.
    rx_peak: u16,
    /// Receive descriptors waiting at the latest `rx_burst`.
    rx_last: u16,
    /// `rx_burst` calls that found the receive ring full.
    rx_full_polls: u64,
    /// The receive ring's size at the latest `rx_burst` (0: never connected): kept after a
    /// disconnect, so that `show ports` still says what the counters above were measured on.
    rx_size: u16,
}

/// Why a handshake step failed: the reason sent to the peer in DISCONNECT.
type Reject = &'static str;

impl MemifPort {
    /// Validates `cfg` and creates the port. A server binds (or joins) its socket now; a client
    /// first tries to connect on the first [`Port::poll_control`].
    pub fn new(cfg: MemifConfig) -> Result<MemifPort, MemifError> {
        cfg.validate()?;
        // Started now, where the port is made, not mid-handshake on the worker (see `setup_thread`).
        setup_thread();
        let listener = match cfg.role {
            Role::Server => Some(listener::register(
                &cfg.socket_path,
                cfg.id,
                &cfg.name,
                hello(&cfg),
            )?),
            Role::Client => None,
        };
        Ok(MemifPort {
            cfg,
            listener,
            state: State::Idle {
                next_try: Instant::now(),
            },
            stats: PortStats::default(),
            errors: MemifErrors::default(),
            connects: 0,
            last_disconnect: None,
            bad_index_seen: 0,
            rx_peak: 0,
            rx_last: 0,
            rx_full_polls: 0,
            rx_size: 0,
        })
    }

    pub fn config(&self) -> &MemifConfig {
        &self.cfg
    }

    /// The interface's MAC address (configured, or `02:fe:` + the id).
    pub fn mac(&self) -> [u8; 6] {
        self.cfg.mac.unwrap_or_else(|| {
            let id = self.cfg.id.to_be_bytes();
            [0x02, 0xfe, id[0], id[1], id[2], id[3]]
        })
    }

    pub fn state(&self) -> MemifState {
        match self.state {
            State::Idle { .. } => MemifState::Idle,
            State::Connected(_) => MemifState::Connected,
            _ => MemifState::Connecting,
        }
    }

    /// Data-path drop reasons and faults since creation (or `clear_stats`).
    pub fn errors(&self) -> MemifErrors {
        self.errors
    }

    /// How many times the port reached Connected.
    pub fn connects(&self) -> u64 {
        self.connects
    }

    /// Why the last connection ended (ours or the peer's reason).
    pub fn last_disconnect(&self) -> Option<&str> {
        self.last_disconnect.as_deref()
    }

    /// The ring size in use while connected (log2), else the configured one.
    pub fn ring_size_log2(&self) -> u8 {
        match &self.state {
            State::Connected(c) => c.rx.ring_ref().log2(),
            _ => self.cfg.ring_size_log2,
        }
    }

    /// The eventfd the peer kicks when it has sent us packets (while connected). In polling mode the
    /// peer is asked not to kick it. A worker can sleep on it (readable = packets may be waiting);
    /// `rx_burst` drains it.
    pub fn rx_event_fd(&self) -> Option<RawFd> {
        match &self.state {
            State::Connected(c) => {
                let (_, fd) = match self.cfg.role {
                    Role::Server => c.link.c2s.as_ref()?,
                    Role::Client => c.link.s2c.as_ref()?,
                };
                Some(fd.as_raw_fd())
            }
            _ => None,
        }
    }

    /// The control connection's socket, if any (readable = `poll_control` has work).
    pub fn control_fd(&self) -> Option<RawFd> {
        match &self.state {
            State::Idle { .. } => None,
            State::ServerHandshake(l, _) => Some(l.sock.as_raw_fd()),
            State::ClientHello { sock, .. } => Some(sock.as_raw_fd()),
            State::ClientHandshake { link, .. } => Some(link.sock.as_raw_fd()),
            State::Connected(c) => Some(c.link.sock.as_raw_fd()),
        }
    }

    /// Sends DISCONNECT with `reason` (best effort), then drops the connection.
    fn disconnect(&mut self, reason: &str) {
        let sock = match &self.state {
            State::Idle { .. } => None,
            State::ServerHandshake(l, _) => Some(&l.sock),
            State::ClientHello { sock, .. } => Some(sock),
            State::ClientHandshake { link, .. } => Some(&link.sock),
            State::Connected(c) => Some(&c.link.sock),
        };
        if let Some(s) = sock {
            let m = Msg::Disconnect {
                code: 0,
                reason: reason.to_string(),
            };
            let _ = sys::send_msg(s.as_fd(), &m.emit(), None);
        }
        self.teardown(format!("local: {reason}"));
    }

    /// Drops the connection (closing and unmapping everything) and goes back to Idle.
    fn teardown(&mut self, why: String) {
        if matches!(self.state, State::Idle { .. }) {
            return;
        }
        tracing::info!(port = %self.cfg.name, reason = %why, "memif disconnected");
        let old = std::mem::replace(
            &mut self.state,
            State::Idle {
                next_try: Instant::now() + RETRY_INTERVAL,
            },
        );
        // Unmapping a 16 MiB region and closing the last descriptor of its memory file (which
        // frees its pages) took the worker 2–7 ms; the setup thread does it (`setup_thread`).
        if let Err(std::sync::mpsc::SendError(SetupJob::Release(old))) =
            setup_thread().send(SetupJob::Release(Box::new(old)))
        {
            drop(old);
        }
        self.last_disconnect = Some(why);
        if let Some(l) = &self.listener {
            l.lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_busy(self.cfg.id, false);
        }
    }

    fn poll_server_idle(&mut self) {
        let Some(l) = &self.listener else { return };
        let handoff = {
            let mut g = l.lock().unwrap_or_else(|e| e.into_inner());
            g.poll();
            let h = g.take(self.cfg.id);
            if h.is_some() {
                g.set_busy(self.cfg.id, true);
            }
            h
        };
        let Some(h) = handoff else { return };
        let link = Link {
            sock: h.sock,
            regions: Vec::new(),
            c2s: None,
            s2c: None,
            peer_name: h.init.name.clone(),
            since: Instant::now(),
        };
        self.state = State::ServerHandshake(link, None);
        match self.check_init(&h.init) {
            Err(reason) => self.disconnect(reason),
            Ok(()) => self.send_or_drop(&Msg::Ack, None),
        }
    }

    fn check_init(&self, init: &msg::Init) -> Result<(), Reject> {
        if init.version != msg::VERSION {
            return Err("Incompatible memif version");
        }
        if init.mode != msg::MODE_ETHERNET {
            return Err("Only ethernet mode supported");
        }
        if let Some(s) = &self.cfg.secret {
            if init.secret.is_empty() {
                return Err("Secret required");
            }
            if init.secret != s.as_bytes() {
                return Err("Incorrect secret");
            }
        }
        Ok(())
    }

    /// Sends a message on the current connection; on failure tears it down.
    fn send_or_drop(&mut self, m: &Msg, fd: Option<std::os::fd::BorrowedFd<'_>>) {
        let sock = match &self.state {
            State::ServerHandshake(l, _) => &l.sock,
            State::ClientHello { sock, .. } => sock,
            State::ClientHandshake { link, .. } => &link.sock,
            State::Connected(c) => &c.link.sock,
            State::Idle { .. } => return,
        };
        if let Err(e) = sys::send_msg(sock.as_fd(), &m.emit(), fd) {
            self.teardown(format!("local: sending {} failed: {e}", m.kind()));
        }
    }

    /// Reads one control message from the current connection.
    fn recv(&mut self) -> Option<(Msg, Option<OwnedFd>)> {
        let sock = match &self.state {
            State::ServerHandshake(l, _) => &l.sock,
            State::ClientHello { sock, .. } => sock,
            State::ClientHandshake { link, .. } => &link.sock,
            State::Connected(c) => &c.link.sock,
            State::Idle { .. } => return None,
        };
        let mut buf = [0u8; MSG_SIZE + 1];
        match sys::recv_msg(sock.as_fd(), &mut buf) {
            Ok(Recv::WouldBlock) => None,
            Ok(Recv::Closed) => {
                self.teardown("peer closed the control socket".into());
                None
            }
            Err(e) => {
                self.teardown(format!("control socket error: {e}"));
                None
            }
            Ok(Recv::Msg { len, truncated, fd }) => {
                if truncated {
                    self.disconnect("Invalid message size");
                    return None;
                }
                match Msg::parse(&buf[..len.min(buf.len())]) {
                    Ok(m) => Some((m, fd)),
                    Err(msg::MsgError::BadLength { .. }) => {
                        self.disconnect("Invalid message size");
                        None
                    }
                    Err(msg::MsgError::UnknownType { .. }) => {
                        self.disconnect("Unknown message type");
                        None
                    }
                }
            }
        }
    }

    fn on_server_msg(&mut self, m: Msg, fd: Option<OwnedFd>) -> Result<(), Reject> {
        let rx_flags = self.rx_ring_flags();
        let State::ServerHandshake(link, mapping) = &mut self.state else {
            return Ok(());
        };
        match m {
            Msg::AddRegion { index, size } => {
                let fd = fd.ok_or("Missing region fd")?;
                if index as usize != link.regions.len() || index > MAX_REGION_INDEX {
                    return Err("Invalid region index");
                }
                // Mapped on the setup thread; `poll_mapping` sends the ACK (module doc).
                let (done, rx) = std::sync::mpsc::channel();
                match setup_thread().send(SetupJob::Map(MapJob { fd, size, done })) {
                    Ok(()) => *mapping = Some(Mapping { done: rx }),
                    Err(std::sync::mpsc::SendError(SetupJob::Map(j))) => {
                        let r = Region::map(j.fd, j.size).map_err(|_| "Failed to map region")?;
                        link.regions.push(r);
                        self.send_or_drop(&Msg::Ack, None);
                    }
                    Err(_) => unreachable!("the job sent is the job returned"),
                }
            }
            Msg::AddRing(r) => {
                let fd = fd.ok_or("Missing interrupt fd")?;
                if r.index != 0 {
                    return Err("Invalid ring index");
                }
                let rr = RingRef::new(&link.regions, r.region, r.offset, r.log2_ring_size)
                    .map_err(|_| "Invalid ring")?;
                let slot = if r.flags & msg::ADD_RING_FLAG_C2S != 0 {
                    &mut link.c2s
                } else {
                    &mut link.s2c
                };
                if slot.is_some() {
                    return Err("Ring already added");
                }
                *slot = Some((rr, fd));
                self.send_or_drop(&Msg::Ack, None);
            }
            Msg::Connect { if_name } => {
                let (Some((c2s, _)), Some((s2c, _))) = (&link.c2s, &link.s2c) else {
                    return Err("Missing rings");
                };
                let (c2s, s2c) = (*c2s, *s2c);
                for rr in [c2s, s2c] {
                    let ring = rr.ring(&link.regions);
                    if ring.cookie() != ring::COOKIE {
                        return Err("Wrong ring");
                    }
                    // As DPDK's memif_connect: both ends start from index 0.
                    ring.set_head(0, std::sync::atomic::Ordering::Relaxed);
                    ring.set_tail(0, std::sync::atomic::Ordering::Relaxed);
                }
                c2s.ring(&link.regions).set_flags(rx_flags);
                let State::ServerHandshake(link, _) = std::mem::replace(
                    &mut self.state,
                    State::Idle {
                        next_try: Instant::now(),
                    },
                ) else {
                    unreachable!()
                };
                self.state = State::Connected(Box::new(Connected {
                    rx: RxQueue::new(c2s, Side::Server, None),
                    tx: TxQueue::new(s2c, Side::Server, None),
                    link,
                    peer_if_name: if_name,
                }));
                self.connects += 1;
                let name = self.cfg.name.clone();
                self.send_or_drop(&Msg::Connected { if_name: name }, None);
            }
            Msg::Disconnect { reason, .. } => self.teardown(format!("peer: {reason}")),
            _ => return Err("Unexpected message"),
        }
        Ok(())
    }

    fn rx_ring_flags(&self) -> u16 {
        match self.cfg.mode {
            Mode::Polling => ring::RING_FLAG_MASK_INT,
            Mode::Interrupt => 0,
        }
    }

    fn poll_client_idle(&mut self) {
        let State::Idle { next_try } = self.state else {
            return;
        };
        if Instant::now() < next_try {
            return;
        }
        match sys::connect(&SockAddr::parse(&self.cfg.socket_path)) {
            Ok(sock) => {
                self.state = State::ClientHello {
                    sock,
                    since: Instant::now(),
                    building: None,
                }
            }
            Err(_) => {
                self.state = State::Idle {
                    next_try: Instant::now() + RETRY_INTERVAL,
                }
            }
        }
    }

    /// Client: HELLO received; build the region, rings and eventfds on a thread of their own
    /// (module doc). [`MemifPort::poll_building`] goes on when they are ready.
    fn on_hello(&mut self, h: msg::Hello) -> Result<(), Reject> {
        if h.min_version > msg::VERSION || h.max_version < msg::VERSION {
            return Err("Incompatible memif version");
        }
        let log2 = self.cfg.ring_size_log2.min(h.max_log2_ring_size);
        if !ring::LOG2_RING_SIZE_RANGE.contains(&log2) {
            return Err("Unsupported ring size");
        }
        let State::ClientHello { building, .. } = &mut self.state else {
            return Ok(());
        };
        if building.is_some() {
            return Err("Unexpected message");
        }
        let (tx, done) = std::sync::mpsc::channel();
        let job = RegionJob {
            log2,
            bsize: self.cfg.buffer_size,
            done: tx,
        };
        if setup_thread().send(SetupJob::Build(job)).is_err() {
            tracing::warn!(port = %self.cfg.name, "memif: no thread to build the region on");
            self.last_disconnect =
                Some("local: cannot create shared memory: no builder thread".into());
            self.state = State::Idle {
                next_try: Instant::now() + RETRY_INTERVAL,
            };
            return Ok(());
        }
        *building = Some(Building {
            done,
            log2,
            peer: h.name,
        });
        Ok(())
    }

    /// Client: takes the region once its thread has built it, and queues INIT..CONNECT.
    /// Server: takes the peer's region once the setup thread has mapped it, and acknowledges it.
    fn poll_mapping(&mut self) {
        let State::ServerHandshake(link, mapping @ Some(_)) = &mut self.state else {
            return;
        };
        let done = match mapping.as_ref().map(|m| m.done.try_recv()) {
            Some(Err(std::sync::mpsc::TryRecvError::Empty)) | None => return,
            Some(Ok(r)) => r,
            Some(Err(std::sync::mpsc::TryRecvError::Disconnected)) => {
                Err(io::Error::other("the memif setup thread is gone"))
            }
        };
        *mapping = None;
        match done {
            Ok(region) => {
                link.regions.push(region);
                self.send_or_drop(&Msg::Ack, None);
            }
            Err(e) => {
                tracing::warn!(port = %self.cfg.name, error = %e, "memif: cannot map the peer's region");
                self.disconnect("Failed to map region");
            }
        }
    }

    fn poll_building(&mut self) {
        let State::ClientHello {
            building: Some(b), ..
        } = &self.state
        else {
            return;
        };
        let built = match b.done.try_recv() {
            Err(std::sync::mpsc::TryRecvError::Empty) => return,
            Ok(r) => r,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => Err(io::Error::other(
                "the thread building the region ended without it",
            )),
        };
        let (sock, b) = match std::mem::replace(
            &mut self.state,
            State::Idle {
                next_try: Instant::now(),
            },
        ) {
            State::ClientHello {
                sock,
                building: Some(b),
                ..
            } => (sock, b),
            other => {
                self.state = other;
                return;
            }
        };
        let rings = match built {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(port = %self.cfg.name, error = %e, "memif: cannot create shared memory");
                // Dropping `sock` closes the connection; the server sees it and starts over.
                self.last_disconnect = Some(format!("local: cannot create shared memory: {e}"));
                self.state = State::Idle {
                    next_try: Instant::now() + RETRY_INTERVAL,
                };
                return;
            }
        };
        let log2 = b.log2;
        let link = Link {
            sock,
            regions: rings.regions,
            c2s: Some(rings.c2s),
            s2c: Some(rings.s2c),
            peer_name: b.peer,
            since: Instant::now(),
        };
        let rb = ring::ring_bytes(log2) as u32;
        let init = msg::Init {
            version: msg::VERSION,
            id: self.cfg.id,
            mode: msg::MODE_ETHERNET,
            secret: self.cfg.secret.clone().unwrap_or_default().into_bytes(),
            name: "vecswitch".into(),
        };
        let ring = |flags, offset| {
            Msg::AddRing(msg::AddRing {
                flags,
                index: 0,
                region: 0,
                offset,
                log2_ring_size: log2,
                private_hdr_size: 0,
            })
        };
        let size = link.regions[0].len() as u64;
        let mut queue = VecDeque::from([
            (Msg::AddRegion { index: 0, size }, Attach::Region),
            (ring(msg::ADD_RING_FLAG_C2S, 0), Attach::C2sEvent),
            (ring(0, rb), Attach::S2cEvent),
            (
                Msg::Connect {
                    if_name: self.cfg.name.clone(),
                },
                Attach::None,
            ),
        ]);
        queue.push_front((Msg::Init(init), Attach::None));
        self.state = State::ClientHandshake { link, queue, log2 };
        self.client_send_next();
    }

    fn client_send_next(&mut self) {
        let State::ClientHandshake { link, queue, .. } = &mut self.state else {
            return;
        };
        let Some((m, attach)) = queue.pop_front() else {
            return;
        };
        let fd = match attach {
            Attach::None => None,
            Attach::Region => link.regions[0].fd(),
            Attach::C2sEvent => link.c2s.as_ref().map(|(_, f)| f.as_fd()),
            Attach::S2cEvent => link.s2c.as_ref().map(|(_, f)| f.as_fd()),
        };
        if let Err(e) = sys::send_msg(link.sock.as_fd(), &m.emit(), fd) {
            self.teardown(format!("local: sending {} failed: {e}", m.kind()));
        }
    }

    fn on_client_msg(&mut self, m: Msg) -> Result<(), Reject> {
        match (&mut self.state, m) {
            (_, Msg::Disconnect { reason, .. }) => self.teardown(format!("peer: {reason}")),
            (State::ClientHello { .. }, Msg::Hello(h)) => self.on_hello(h)?,
            (State::ClientHandshake { queue, .. }, Msg::Ack) if !queue.is_empty() => {
                self.client_send_next()
            }
            (State::ClientHandshake { queue, .. }, Msg::Connected { if_name })
                if queue.is_empty() =>
            {
                let State::ClientHandshake { link, log2, .. } = std::mem::replace(
                    &mut self.state,
                    State::Idle {
                        next_try: Instant::now(),
                    },
                ) else {
                    unreachable!()
                };
                let (Some((c2s, _)), Some((s2c, _))) = (&link.c2s, &link.s2c) else {
                    unreachable!()
                };
                let (c2s, s2c) = (*c2s, *s2c);
                let bsize = self.cfg.buffer_size;
                let rb = ring::ring_bytes(log2) as u32;
                let n = 1u32 << log2;
                let c2s_bufs = ClientBuffers {
                    base: 2 * rb,
                    size: bsize,
                };
                let s2c_bufs = ClientBuffers {
                    base: 2 * rb + n * bsize,
                    size: bsize,
                };
                s2c.ring(&link.regions).set_flags(self.rx_ring_flags());
                let mut rx = RxQueue::new(s2c, Side::Client, Some(s2c_bufs));
                rx.refill(&link.regions);
                let tx = TxQueue::new(c2s, Side::Client, Some(c2s_bufs));
                self.state = State::Connected(Box::new(Connected {
                    link,
                    rx,
                    tx,
                    peer_if_name: if_name,
                }));
                self.connects += 1;
            }
            (State::Connected(_), Msg::Ack) => {}
            _ => return Err("Unexpected message"),
        }
        Ok(())
    }

    fn state_name(&self) -> &'static str {
        match self.state {
            State::Idle { .. } => match self.cfg.role {
                Role::Server => "listening",
                Role::Client => "connecting",
            },
            State::Connected(_) => "connected",
            _ => "handshake",
        }
    }
}

/// Client: one memfd region `[C2S ring][S2C ring][C2S buffers][S2C buffers]` (DPDK's layout), both
/// rings initialized, one eventfd per ring.
fn build_client_rings(log2: u8, bsize: u32) -> io::Result<ClientRings> {
    let rb = ring::ring_bytes(log2) as u64;
    let n = 1u64 << log2;
    let size = 2 * rb + 2 * n * bsize as u64;
    let fd = sys::memfd("memif_region_0", size)?;
    let regions = vec![Region::map_fresh(fd, size)?];
    let bad = |e: ring::RingError| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let c2s = RingRef::new(&regions, 0, 0, log2).map_err(bad)?;
    let s2c = RingRef::new(&regions, 0, rb as u32, log2).map_err(bad)?;
    let bufs = [
        (
            c2s,
            ClientBuffers {
                base: 2 * rb as u32,
                size: bsize,
            },
        ),
        (
            s2c,
            ClientBuffers {
                base: (2 * rb + n * bsize as u64) as u32,
                size: bsize,
            },
        ),
    ];
    for (rr, b) in bufs {
        let r = rr.ring(&regions);
        ring::init_ring(&r);
        for s in 0..n as u16 {
            r.set_desc(
                s,
                ring::Desc {
                    flags: 0,
                    region: 0,
                    length: b.size,
                    offset: b.base + s as u32 * b.size,
                },
            );
        }
    }
    Ok(ClientRings {
        regions,
        c2s: (c2s, sys::eventfd()?),
        s2c: (s2c, sys::eventfd()?),
    })
}

fn hello(cfg: &MemifConfig) -> msg::Hello {
    msg::Hello {
        name: "vecswitch".into(),
        min_version: msg::VERSION,
        max_version: msg::VERSION,
        max_region: MAX_REGION_INDEX,
        max_c2s_ring: cfg.num_queues - 1,
        max_s2c_ring: cfg.num_queues - 1,
        max_log2_ring_size: cfg.ring_size_log2,
    }
}

impl Port for MemifPort {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.reasons().to_vec()
    }

    fn configured_mac(&self) -> Option<[u8; 6]> {
        self.cfg.mac
    }

    /// In interrupt mode the receive ring's eventfd (the peer writes it after it enqueues,
    /// [`Mode::Interrupt`]; `rx_burst` drains it before it reads the ring, so a frame enqueued
    /// after that always leaves it readable); during a handshake the control socket; idle (no
    /// peer yet) nothing: the worker's periodic wake runs the retries and accepts.
    fn rx_wait(&self) -> crate::RxWait<'_> {
        use crate::RxWait;
        match &self.state {
            State::Connected(c) if self.cfg.mode == Mode::Interrupt => {
                let efd = match self.cfg.role {
                    Role::Server => c.link.c2s.as_ref(),
                    Role::Client => c.link.s2c.as_ref(),
                };
                efd.map_or(RxWait::Poll, |(_, fd)| RxWait::Fd(fd.as_fd()))
            }
            State::Connected(_) => RxWait::Poll,
            State::ServerHandshake(l, None) => RxWait::Fd(l.sock.as_fd()),
            State::ClientHandshake { link, .. } => RxWait::Fd(link.sock.as_fd()),
            State::ClientHello {
                sock,
                building: None,
                ..
            } => RxWait::Fd(sock.as_fd()),
            // A region being built or mapped on the setup thread: poll until it is ready.
            State::ServerHandshake(_, Some(_)) | State::ClientHello { .. } => RxWait::Poll,
            State::Idle { .. } => RxWait::Nothing,
        }
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let State::Connected(c) = &mut self.state else {
            return 0;
        };
        if self.cfg.mode == Mode::Interrupt {
            let efd = match self.cfg.role {
                Role::Server => c.link.c2s.as_ref(),
                Role::Client => c.link.s2c.as_ref(),
            };
            if let Some((_, fd)) = efd {
                sys::eventfd_drain(fd.as_fd());
            }
        }
        let got = c.rx.rx(&c.link.regions, pool, out, max, &mut self.errors);
        self.stats.rx_packets += got.packets;
        self.stats.rx_bytes += got.bytes;
        self.stats.rx_dropped += got.dropped;
        self.rx_peak = self.rx_peak.max(got.waiting);
        self.rx_last = got.waiting;
        self.rx_size = c.rx.ring_ref().size();
        if got.waiting == self.rx_size {
            self.rx_full_polls += 1;
        }
        got.packets as usize
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        let State::Connected(c) = &mut self.state else {
            self.stats.tx_dropped += pkts.len() as u64;
            self.errors.tx_link_down += pkts.len() as u64;
            return 0;
        };
        let sent = c.tx.tx(&c.link.regions, pool, pkts, &mut self.errors);
        let n = sent.packets as usize;
        self.stats.tx_packets += sent.packets;
        self.stats.tx_bytes += sent.bytes;
        self.stats.tx_dropped += (pkts.len() - n) as u64;
        if n > 0 && !c.tx.peer_polls(&c.link.regions) {
            let efd = match self.cfg.role {
                Role::Server => c.link.s2c.as_ref(),
                Role::Client => c.link.c2s.as_ref(),
            };
            if let Some((_, fd)) = efd {
                sys::eventfd_kick(fd.as_fd());
            }
        }
        n
    }

    fn poll_control(&mut self) {
        // A peer index more than a ring ahead of ours means the peer's ring state is corrupt: the
        // data path refuses the ring; start over with a fresh connection.
        if self.errors.bad_ring_index != self.bad_index_seen {
            self.bad_index_seen = self.errors.bad_ring_index;
            if let State::Connected(_) = self.state {
                self.disconnect("Ring index out of range");
            }
        }
        if let State::Idle { .. } = self.state {
            match self.cfg.role {
                Role::Server => self.poll_server_idle(),
                Role::Client => self.poll_client_idle(),
            }
        }
        self.poll_building();
        self.poll_mapping();
        for _ in 0..MAX_MSGS_PER_POLL {
            // A peer waits for the ACK of its region before it sends more.
            if let State::Idle { .. } | State::ServerHandshake(_, Some(_)) = self.state {
                break;
            }
            let Some((m, fd)) = self.recv() else { break };
            let r = match self.cfg.role {
                Role::Server => match self.state {
                    State::Connected(_) => match m {
                        Msg::Disconnect { reason, .. } => {
                            self.teardown(format!("peer: {reason}"));
                            Ok(())
                        }
                        Msg::Ack => Ok(()),
                        _ => Err("Unexpected message"),
                    },
                    _ => self.on_server_msg(m, fd),
                },
                Role::Client => self.on_client_msg(m),
            };
            if let Err(reason) = r {
                self.disconnect(reason);
            }
        }
        let started = match &self.state {
            State::ServerHandshake(l, _) => Some(l.since),
            State::ClientHandshake { link, .. } => Some(link.since),
            State::ClientHello { since, .. } => Some(*since),
            _ => None,
        };
        if started.is_some_and(|s| s.elapsed() > HANDSHAKE_TIMEOUT) {
            self.disconnect("Handshake timeout");
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn clear_stats(&mut self) {
        self.stats = PortStats::default();
        self.errors = MemifErrors::default();
        self.bad_index_seen = 0;
        self.rx_peak = 0;
        self.rx_full_polls = 0;
    }

    fn rx_ring(&self) -> Option<crate::RingFill> {
        if self.rx_size == 0 {
            return None;
        }
        Some(crate::RingFill {
            size: u32::from(self.rx_size),
            peak: u32::from(self.rx_peak),
            last: u32::from(self.rx_last),
            full_polls: self.rx_full_polls,
        })
    }

    fn link(&self) -> LinkState {
        match self.state {
            State::Connected(_) => LinkState::Up,
            _ => LinkState::Down,
        }
    }

    fn describe(&self) -> String {
        let role = match self.cfg.role {
            Role::Server => "server",
            Role::Client => "client",
        };
        let mode = match self.cfg.mode {
            Mode::Polling => "polling",
            Mode::Interrupt => "interrupt",
        };
        let log2 = self.ring_size_log2();
        let mut s = format!(
            "memif {role} socket={} id={} ring={} (2^{log2}) buffer={} mode={mode} state={}",
            self.cfg.socket_path,
            self.cfg.id,
            1u32 << log2,
            self.cfg.buffer_size,
            self.state_name()
        );
        if let State::Connected(c) = &self.state {
            s.push_str(&format!(
                " peer={:?}/{:?}",
                c.link.peer_name, c.peer_if_name
            ));
        } else if let Some(d) = &self.last_disconnect {
            s.push_str(&format!(" last-disconnect={d:?}"));
        }
        s
    }
}

impl Drop for MemifPort {
    fn drop(&mut self) {
        self.disconnect("Interface deleted");
        if let Some(l) = &self.listener {
            l.lock()
                .unwrap_or_else(|e| e.into_inner())
                .unregister(self.cfg.id);
        }
    }
}

/// Entry points for the fuzz targets in `crates/ports/fuzz` (not a stable API).
#[doc(hidden)]
pub mod fuzzing {
    pub use super::ring::fuzz_rings;

    /// Parses an untrusted control record; a record that parses must re-emit to the same fields.
    pub fn control_msg(data: &[u8]) {
        if let Ok(m) = super::msg::Msg::parse(data) {
            let again = super::msg::Msg::parse(&m.emit()).expect("emitted message parses");
            assert_eq!(again.kind(), m.kind());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connect(a: &mut MemifPort, b: &mut MemifPort) {
        for _ in 0..10_000 {
            a.poll_control();
            b.poll_control();
            if a.link() == LinkState::Up && b.link() == LinkState::Up {
                return;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        panic!("no connection: {} / {}", a.describe(), b.describe());
    }

    #[test]
    fn corrupt_peer_index_disconnects_then_reconnects() {
        let sock = format!("@vecswitch-unit-{}-badidx", std::process::id());
        let mut srv = MemifPort::new(MemifConfig::new("srv", &sock, 0, Role::Server)).unwrap();
        let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 0, Role::Client)).unwrap();
        connect(&mut srv, &mut cli);
        // The client's producer index jumps far ahead (a corrupt or hostile peer).
        let State::Connected(c) = &cli.state else {
            unreachable!()
        };
        c.tx.ring_ref()
            .ring(&c.link.regions)
            .set_head(5000, std::sync::atomic::Ordering::Release);
        let mut pool = Pool::new(16);
        let mut out = Vec::new();
        assert_eq!(srv.rx_burst(&mut pool, &mut out, 32), 0);
        assert_eq!(srv.errors().bad_ring_index, 1);
        // ... and `show errors` sees it (the switch lists a port's non-zero error counters).
        let counted: Vec<_> = srv
            .error_counters()
            .into_iter()
            .filter(|r| r.1 > 0)
            .collect();
        assert_eq!(counted, vec![("bad-ring-index", 1)]);
        srv.poll_control();
        assert_eq!(srv.link(), LinkState::Down);
        assert_eq!(
            srv.last_disconnect(),
            Some("local: Ring index out of range")
        );
        for _ in 0..100 {
            cli.poll_control();
            if cli.link() == LinkState::Down {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(cli.last_disconnect(), Some("peer: Ring index out of range"));
        connect(&mut srv, &mut cli);
        assert_eq!((srv.connects(), cli.connects()), (2, 2));
        assert_eq!(pool.in_use(), 0);
    }

    /// A hand-driven client talking raw protocol to our server.
    struct RawClient {
        sock: OwnedFd,
    }

    impl RawClient {
        fn connect(srv: &mut MemifPort, path: &str) -> RawClient {
            let sock = sys::connect(&SockAddr::parse(path)).unwrap();
            let c = RawClient { sock };
            assert!(matches!(c.recv(srv), Msg::Hello(_)));
            c.send(
                &Msg::Init(msg::Init {
                    version: msg::VERSION,
                    id: 0,
                    mode: msg::MODE_ETHERNET,
                    secret: vec![],
                    name: "raw".into(),
                }),
                None,
            );
            assert_eq!(c.recv(srv), Msg::Ack);
            c
        }
        fn send(&self, m: &Msg, fd: Option<std::os::fd::BorrowedFd<'_>>) {
            sys::send_msg(self.sock.as_fd(), &m.emit(), fd).unwrap();
        }
        fn recv(&self, srv: &mut MemifPort) -> Msg {
            for _ in 0..5000 {
                srv.poll_control();
                let mut buf = [0u8; MSG_SIZE];
                if let Recv::Msg { len, .. } = sys::recv_msg(self.sock.as_fd(), &mut buf).unwrap() {
                    return Msg::parse(&buf[..len]).unwrap();
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            panic!("server sent nothing");
        }
        fn expect_disconnect(&self, srv: &mut MemifPort, reason: &str) {
            assert_eq!(
                self.recv(srv),
                Msg::Disconnect {
                    code: 0,
                    reason: reason.into()
                }
            );
            assert_eq!(srv.state(), MemifState::Idle);
        }
    }

    fn ring_msg(flags: u16, region: u16, offset: u32, log2: u8) -> Msg {
        Msg::AddRing(msg::AddRing {
            flags,
            index: 0,
            region,
            offset,
            log2_ring_size: log2,
            private_hdr_size: 0,
        })
    }

    #[test]
    fn hostile_handshakes_are_refused_with_reasons() {
        let path = format!("@vecswitch-unit-{}-hostile", std::process::id());
        let mut srv = MemifPort::new(MemifConfig::new("srv", &path, 0, Role::Server)).unwrap();
        let mfd = sys::memfd("t", 8192).unwrap();
        let efd = sys::eventfd().unwrap();

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 0,
                size: 8192,
            },
            None,
        );
        c.expect_disconnect(&mut srv, "Missing region fd");

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 0,
                size: 1 << 30,
            },
            Some(mfd.as_fd()),
        );
        c.expect_disconnect(&mut srv, "Failed to map region");

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 1,
                size: 8192,
            },
            Some(mfd.as_fd()),
        );
        c.expect_disconnect(&mut srv, "Invalid region index");

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 0,
                size: 8192,
            },
            Some(mfd.as_fd()),
        );
        assert_eq!(c.recv(&mut srv), Msg::Ack);
        c.send(&ring_msg(1, 0, 8192 - 64, 8), Some(efd.as_fd()));
        c.expect_disconnect(&mut srv, "Invalid ring");

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 0,
                size: 8192,
            },
            Some(mfd.as_fd()),
        );
        assert_eq!(c.recv(&mut srv), Msg::Ack);
        c.send(&ring_msg(1, 0, 0, 4), None);
        c.expect_disconnect(&mut srv, "Missing interrupt fd");

        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::Connect {
                if_name: "x".into(),
            },
            None,
        );
        c.expect_disconnect(&mut srv, "Missing rings");

        // Rings inside the region but never initialized by the client: cookie 0.
        let c = RawClient::connect(&mut srv, &path);
        c.send(
            &Msg::AddRegion {
                index: 0,
                size: 8192,
            },
            Some(mfd.as_fd()),
        );
        assert_eq!(c.recv(&mut srv), Msg::Ack);
        c.send(&ring_msg(1, 0, 0, 4), Some(efd.as_fd()));
        assert_eq!(c.recv(&mut srv), Msg::Ack);
        c.send(&ring_msg(0, 0, 1024, 4), Some(efd.as_fd()));
        assert_eq!(c.recv(&mut srv), Msg::Ack);
        c.send(
            &Msg::Connect {
                if_name: "x".into(),
            },
            None,
        );
        c.expect_disconnect(&mut srv, "Wrong ring");

        // Wrong version in INIT.
        let sock = sys::connect(&SockAddr::parse(&path)).unwrap();
        let c = RawClient { sock };
        assert!(matches!(c.recv(&mut srv), Msg::Hello(_)));
        c.send(
            &Msg::Init(msg::Init {
                version: 0x0100,
                id: 0,
                mode: 0,
                secret: vec![],
                name: "old".into(),
            }),
            None,
        );
        c.expect_disconnect(&mut srv, "Incompatible memif version");

        assert_eq!(srv.connects(), 0);
    }

    #[test]
    fn describe_names_role_socket_id_ring_mode_state() {
        let mut cfg = MemifConfig::new("m0", "@vecswitch-unit-describe", 5, Role::Client);
        cfg.ring_size_log2 = 11;
        cfg.mode = Mode::Interrupt;
        let p = MemifPort::new(cfg).unwrap();
        assert_eq!(
            p.describe(),
            "memif client socket=@vecswitch-unit-describe id=5 ring=2048 (2^11) buffer=2048 \
             mode=interrupt state=connecting"
        );
        assert_eq!(p.mac(), [0x02, 0xfe, 0, 0, 0, 5]);
        assert_eq!(p.link(), LinkState::Down);
    }
}
