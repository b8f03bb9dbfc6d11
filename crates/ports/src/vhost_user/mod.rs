//! vhost-user: a virtio-net device backend for QEMU guests and DPDK's `net_virtio_user`.
//!
//! Main types: [`VhostUserConfig`] (validated by [`VhostUserPort::new`]), [`VhostUserPort`] (the
//! [`Port`]), [`VhostUserErrors`] (drop reasons of the data path). Inside: `device` (what each
//! protocol message does: features, memory table, ring setup — rust-vmm's `vhost` crate parses
//! the messages and their file descriptors) and `virtq` (split virtqueues between guest memory
//! and the [`Pool`], through `virtio-queue` and vm-memory's volatile accessors).
//!
//! # Roles
//!
//! The vhost-user *frontend* (QEMU, or DPDK's virtio-user) owns the memory and the rings; we are
//! the *backend* (the device). Either side may listen on the Unix socket:
//!
//! - [`Role::Server`]: we listen (QEMU `-chardev socket,path=S`, DPDK `server=0`); one frontend at
//!   a time; when it goes away we listen again.
//! - [`Role::Client`]: we connect (QEMU `-chardev socket,path=S,server=on`, DPDK `server=1`),
//!   retrying every 250 ms while nobody listens and after the frontend restarts.
//!
//! All of this happens in [`Port::poll_control`], which never blocks for long: it looks at the
//! sockets with `poll(2)` and a zero timeout, then handles the messages that are there (a message
//! is read whole once its first bytes arrived: `vhost`'s reader waits for the rest, so a frontend
//! that stopped in the middle of a message would hold the worker; DPDK and QEMU send each message
//! with one `sendmsg`, and a frontend that hangs up mid-message is a disconnect). The worker
//! polls both queues in `rx_burst`/`tx_burst`; no thread per queue.
//!
//! # What is negotiated
//!
//! VIRTIO_F_VERSION_1 (12-byte virtio-net header, prepended on transmit and stripped on receive),
//! VIRTIO_NET_F_MRG_RXBUF (a frame longer than one receive buffer spans several, `num_buffers` in
//! its header), VIRTIO_RING_F_EVENT_IDX, VHOST_USER_F_PROTOCOL_FEATURES with REPLY_ACK. One queue
//! pair, split rings, no offloads, up to 8 memory regions (the classic SET_MEM_TABLE), each mapped
//! from the descriptor the frontend sent. We poll, so we ask the driver not to kick (used ring
//! flag VRING_USED_F_NO_NOTIFY); we write the call eventfd only when the driver asked for an
//! interrupt (EVENT_IDX's `used_event`, or no VRING_AVAIL_F_NO_INTERRUPT).
//!
//! [`Port::link`] is `Up` once the memory is mapped, both rings are started and enabled, **and the
//! driver has posted receive buffers**: virtio-user signals DRIVER_OK before its port start fills
//! the receive ring, and a sender that starts at "up" would otherwise find every frame refused.
//!
//! # Interoperating with DPDK testpmd (no VM)
//!
//! ```text
//! dpdk-testpmd -l 0,1 --no-huge -m 1024 --no-pci --iova-mode=va --file-prefix=vs1 \
//!   --single-file-segments \
//!   --vdev=net_virtio_user0,path=/tmp/vs.sock,queues=1,server=0 \
//!   -- --total-num-mbufs=32768 --forward-mode=rxonly -a
//! ```
//!
//! `server=0`: testpmd connects, our port is a [`Role::Server`]; `server=1`: testpmd listens, our
//! port is a [`Role::Client`]. Without hugepages DPDK's memory must be shareable with the backend
//! (passed as file descriptors): `--single-file-segments` makes `--no-huge` memory one memfd that
//! virtio-user can send (`--in-memory` works too). The tests in
//! `crates/ports/tests/vhost_user_testpmd.rs` run both roles.

mod device;
mod virtq;

pub use device::MAX_MEM_REGIONS;

use crate::{LinkState, Port, PortStats};
use device::Device;
use serde::{Deserialize, Serialize};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use vecswitch_buffer::Pool;
use vhost::vhost_user::{BackendReqHandler, Error as VuError, Listener};

/// Which end of the Unix socket this port is (it is always the virtio device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// We listen; the frontend connects.
    #[default]
    Server,
    /// We connect to a listening frontend, and reconnect after it restarts.
    Client,
}

/// Configuration of one vhost-user port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VhostUserConfig {
    /// Port name.
    pub name: String,
    /// Filesystem path of the vhost-user Unix socket.
    pub socket_path: String,
    pub role: Role,
}

/// Longest socket path (sun_path is 108 bytes with the NUL).
pub const MAX_SOCKET_PATH: usize = 107;

impl VhostUserConfig {
    pub fn new(name: &str, socket_path: &str, role: Role) -> VhostUserConfig {
        VhostUserConfig {
            name: name.to_string(),
            socket_path: socket_path.to_string(),
            role,
        }
    }

    /// Checks every field; the error names the field, the value and what is accepted.
    pub fn validate(&self) -> Result<(), VhostUserError> {
        let bad = |field: &'static str, value: &str, accepted: &'static str| {
            Err(VhostUserError::InvalidConfig {
                field,
                value: format!("{value:?}"),
                accepted,
            })
        };
        if self.name.is_empty() {
            return bad("name", &self.name, "a non-empty name");
        }
        if self.socket_path.is_empty()
            || self.socket_path.len() > MAX_SOCKET_PATH
            || self.socket_path.contains('\0')
            || self.socket_path.starts_with('@')
        {
            return bad(
                "socket_path",
                &self.socket_path,
                "a filesystem path of 1 to 107 bytes without NUL (no abstract `@` names)",
            );
        }
        Ok(())
    }
}

/// Errors of [`VhostUserPort::new`].
#[derive(Debug, thiserror::Error)]
pub enum VhostUserError {
    #[error("invalid vhost-user config: {field} = {value}; accepted: {accepted}")]
    InvalidConfig {
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error("vhost-user socket {path}: cannot listen: {source}")]
    Listen {
        path: String,
        #[source]
        source: VuError,
    },
}

/// Why frames were dropped (each also counted in `rx_dropped` / `tx_dropped`), and protocol
/// events, as `show ports` prints them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct VhostUserErrors {
    /// Driver frame dropped: the Pool ran out in the middle of it.
    pub rx_no_buffer: u64,
    /// Driver frame dropped: a descriptor outside guest memory or write-only.
    pub rx_bad_descriptor: u64,
    /// Driver frame dropped: longer than 65535 bytes.
    pub rx_oversize: u64,
    /// Driver frame dropped: not even a virtio-net header, or empty.
    pub rx_runt: u64,
    /// Our frame not sent: the driver's receive ring had no room (bursts that hit it).
    pub tx_ring_full: u64,
    /// Our frame dropped: longer than one receive chain and MRG_RXBUF not negotiated.
    pub tx_too_big: u64,
    /// Our frame dropped: a receive buffer outside guest memory.
    pub tx_bad_descriptor: u64,
    /// Frames offered while the link was down.
    pub tx_link_down: u64,
    /// Connections made (accepted or connected).
    pub connects: u64,
    /// Connections that ended (frontend gone or protocol error).
    pub disconnects: u64,
    /// Protocol messages that failed.
    pub protocol_errors: u64,
}

impl VhostUserErrors {
    /// The loss and protocol counters as `(reason, count)`, in a fixed order, as `show errors`
    /// prints them (node `port NAME`); `connects` and `disconnects` are events, not losses.
    pub fn reasons(&self) -> [(&'static str, u64); 9] {
        [
            ("rx-no-buffer", self.rx_no_buffer),
            ("rx-bad-descriptor", self.rx_bad_descriptor),
            ("rx-oversize", self.rx_oversize),
            ("rx-runt", self.rx_runt),
            ("tx-ring-full", self.tx_ring_full),
            ("tx-too-big", self.tx_too_big),
            ("tx-bad-descriptor", self.tx_bad_descriptor),
            ("tx-link-down", self.tx_link_down),
            ("protocol-errors", self.protocol_errors),
        ]
    }
}

type Handler = BackendReqHandler<Mutex<Device>>;

/// How often a client retries to connect.
const RETRY: Duration = Duration::from_millis(250);
/// Messages handled per `poll_control` call at most (the rest wait for the next call).
const MSGS_PER_POLL: usize = 64;

/// A vhost-user backend port (see the module doc).
pub struct VhostUserPort {
    cfg: VhostUserConfig,
    dev: Arc<Mutex<Device>>,
    listener: Option<Listener>,
    conn: Option<Handler>,
    next_connect: Instant,
    stats: PortStats,
    errors: VhostUserErrors,
    scratch: virtq::Scratch,
    last_error: Option<String>,
}

impl std::fmt::Debug for VhostUserPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VhostUserPort")
            .field("cfg", &self.cfg)
            .field("connected", &self.conn.is_some())
            .field("stats", &self.stats)
            .field("errors", &self.errors)
            .finish()
    }
}

impl VhostUserPort {
    /// Validates `cfg`; a server starts listening now (a stale socket file is replaced), a client
    /// connects in [`Port::poll_control`].
    pub fn new(cfg: VhostUserConfig) -> Result<VhostUserPort, VhostUserError> {
        cfg.validate()?;
        let listener = match cfg.role {
            Role::Server => {
                let l = Listener::new(&cfg.socket_path, true)
                    .and_then(|l| l.set_nonblocking(true).map(|_| l))
                    .map_err(|source| VhostUserError::Listen {
                        path: cfg.socket_path.clone(),
                        source,
                    })?;
                Some(l)
            }
            Role::Client => None,
        };
        Ok(VhostUserPort {
            cfg,
            dev: Arc::new(Mutex::new(Device::new())),
            listener,
            conn: None,
            next_connect: Instant::now(),
            stats: PortStats::default(),
            errors: VhostUserErrors::default(),
            scratch: virtq::Scratch::default(),
            last_error: None,
        })
    }

    /// Drop reasons and protocol events.
    pub fn errors(&self) -> VhostUserErrors {
        self.errors
    }

    pub fn config(&self) -> &VhostUserConfig {
        &self.cfg
    }

    fn device(&self) -> MutexGuard<'_, Device> {
        // A panic while holding the lock leaves a device we reset on the next connection anyway.
        self.dev.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn connect(&mut self) {
        match self.cfg.role {
            Role::Server => {
                let Some(l) = self.listener.as_ref() else {
                    return;
                };
                match l.accept() {
                    Ok(Some(stream)) => {
                        self.conn = Some(Handler::from_stream(stream, self.dev.clone()));
                        self.errors.connects += 1;
                    }
                    Ok(None) => {}
                    Err(e) => self.last_error = Some(format!("accept: {e}")),
                }
            }
            Role::Client => {
                if Instant::now() < self.next_connect {
                    return;
                }
                self.next_connect = Instant::now() + RETRY;
                match Handler::connect(&self.cfg.socket_path, self.dev.clone()) {
                    Ok(h) => {
                        self.conn = Some(h);
                        self.errors.connects += 1;
                    }
                    Err(e) => self.last_error = Some(format!("connect: {e}")),
                }
            }
        }
    }

    fn disconnect(&mut self, why: String) {
        tracing::info!(port = %self.cfg.name, %why, "vhost-user frontend gone");
        self.conn = None;
        self.device().reset();
        self.errors.disconnects += 1;
        self.last_error = Some(why);
        self.next_connect = Instant::now() + RETRY;
    }
}

/// Whether `fd` has something to read (or hung up) now.
fn readable(fd: RawFd) -> bool {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: `pfd` is a valid pollfd for the duration of the call, count 1, timeout 0 (no wait).
    let r = unsafe { libc::poll(&mut pfd, 1, 0) };
    r > 0 && pfd.revents != 0
}

/// VHOST_USER_SET_VRING_ENABLE (vhost-user specification, "Front-end message types").
const SET_VRING_ENABLE: u32 = 18;

/// The next message on `fd`, without taking it, if it is SET_VRING_ENABLE: (ring, enable).
fn peek_vring_enable(fd: RawFd) -> Option<(u32, bool)> {
    // Header: request u32, flags u32, size u32; body: VhostUserVringState { index u32, num u32 }.
    let mut buf = [0u8; 20];
    // SAFETY: `buf` is valid for writes of its length for the duration of the call; MSG_PEEK
    // leaves the bytes (and any file descriptors, which we give no room for) in the socket.
    let n = unsafe {
        libc::recv(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    let word = |i: usize| u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    if n != buf.len() as isize || word(0) != SET_VRING_ENABLE || word(8) != 8 {
        return None;
    }
    Some((word(12), word(16) == 1))
}

impl Port for VhostUserPort {
    fn name(&self) -> &str {
        &self.cfg.name
    }

    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        self.errors.reasons().to_vec()
    }

    fn rx_burst(&mut self, pool: &mut Pool, out: &mut Vec<u32>, max: usize) -> usize {
        let mut dev = self.dev.lock().unwrap_or_else(|e| e.into_inner());
        if !dev.ready() {
            return 0;
        }
        virtq::receive(
            &mut dev,
            pool,
            out,
            max,
            &mut self.scratch,
            &mut self.stats,
            &mut self.errors,
        )
    }

    fn tx_burst(&mut self, pool: &mut Pool, pkts: &[u32]) -> usize {
        let mut dev = self.dev.lock().unwrap_or_else(|e| e.into_inner());
        if !dev.ready() {
            self.stats.tx_dropped += pkts.len() as u64;
            self.errors.tx_link_down += pkts.len() as u64;
            return 0;
        }
        virtq::transmit(
            &mut dev,
            pool,
            pkts,
            &mut self.scratch,
            &mut self.stats,
            &mut self.errors,
        )
    }

    fn poll_control(&mut self) {
        if self.conn.is_none() {
            self.connect();
        }
        for _ in 0..MSGS_PER_POLL {
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            if !readable(conn.as_raw_fd()) {
                return;
            }
            // QEMU (7.2) restores its rings' enable state before SET_FEATURES; rust-vmm's
            // `vhost` refuses SET_VRING_ENABLE until PROTOCOL_FEATURES is acked, so we read
            // the request here first and keep what it asked for (see Device::early_enable).
            if let Some((index, enable)) = peek_vring_enable(conn.as_raw_fd()) {
                let mut dev = self.dev.lock().unwrap_or_else(|p| p.into_inner());
                dev.note_early_enable(index, enable);
            }
            match conn.handle_request() {
                Ok(()) => {}
                Err(
                    e @ (VuError::Disconnected
                    | VuError::PartialMessage
                    | VuError::SocketBroken(_)
                    | VuError::SocketError(_)),
                ) => {
                    self.disconnect(e.to_string());
                    return;
                }
                Err(e) => {
                    // A request we refused (or could not parse); the frontend got our NACK if it
                    // asked for REPLY_ACK. The connection goes on.
                    self.errors.protocol_errors += 1;
                    tracing::warn!(port = %self.cfg.name, error = %e, "vhost-user request failed");
                    self.last_error = Some(e.to_string());
                }
            }
        }
    }

    fn stats(&self) -> PortStats {
        self.stats
    }

    fn clear_stats(&mut self) {
        self.stats = PortStats::default();
        self.errors = VhostUserErrors {
            connects: self.errors.connects,
            disconnects: self.errors.disconnects,
            ..VhostUserErrors::default()
        };
    }

    fn link(&self) -> LinkState {
        if self.conn.is_some() && self.device().link_up() {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    fn describe(&self) -> String {
        let role = match self.cfg.role {
            Role::Server => "server",
            Role::Client => "client",
        };
        let mut dev = self.device();
        let state = match (&self.conn, dev.link_up()) {
            (None, _) if self.cfg.role == Role::Server => "listening".to_string(),
            (None, _) => "connecting".to_string(),
            (Some(_), false) => "negotiating".to_string(),
            (Some(_), true) => format!(
                "up, features {:#x}, rings {}/{}",
                dev.acked_features,
                virtio_queue::QueueT::size(&dev.vrings[0].queue),
                virtio_queue::QueueT::size(&dev.vrings[1].queue)
            ),
        };
        let mut s = format!("vhost-user {role} {} {state}", self.cfg.socket_path);
        if let Some(e) = &self.last_error {
            if self.conn.is_none() {
                s.push_str(&format!(" (last: {e})"));
            }
        }
        s
    }
}

impl Drop for VhostUserPort {
    fn drop(&mut self) {
        if self.cfg.role == Role::Server {
            let _ = std::fs::remove_file(&self.cfg.socket_path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_name_field_value_and_accepted() {
        let bad = |cfg: VhostUserConfig, field: &str| {
            let e = VhostUserPort::new(cfg).unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("accepted"), "{e}");
        };
        bad(
            VhostUserConfig::new("", "/tmp/x.sock", Role::Server),
            "name",
        );
        bad(VhostUserConfig::new("v", "", Role::Server), "socket_path");
        bad(
            VhostUserConfig::new("v", "@abstract", Role::Client),
            "socket_path",
        );
        let long = format!("/tmp/{}", "x".repeat(MAX_SOCKET_PATH));
        bad(
            VhostUserConfig::new("v", &long, Role::Client),
            "socket_path",
        );
    }

    fn sock(tag: &str) -> String {
        let p =
            std::env::temp_dir().join(format!("vecswitch-vu-{tag}-{}.sock", std::process::id()));
        p.to_str().unwrap().to_string()
    }

    #[test]
    fn server_without_frontend_listens_counts_tx_and_removes_its_socket() {
        let path = sock("srv");
        let mut port = VhostUserPort::new(VhostUserConfig::new("v", &path, Role::Server)).unwrap();
        assert!(std::path::Path::new(&path).exists());
        port.poll_control();
        assert_eq!(port.link(), LinkState::Down);
        assert!(port.describe().contains("listening"), "{}", port.describe());
        let mut pool = Pool::new(8);
        let h = pool.alloc().unwrap();
        pool.write_packet(h, &[0u8; 60]);
        assert_eq!(port.tx_burst(&mut pool, &[h, h]), 0);
        assert_eq!(port.stats().tx_dropped, 2);
        assert_eq!(port.errors().tx_link_down, 2);
        let counted: Vec<_> = port
            .error_counters()
            .into_iter()
            .filter(|r| r.1 > 0)
            .collect();
        assert_eq!(counted, vec![("tx-link-down", 2)]);
        let mut out = Vec::new();
        assert_eq!(port.rx_burst(&mut pool, &mut out, 32), 0);
        drop(port);
        assert!(!std::path::Path::new(&path).exists());
    }

    #[test]
    fn client_without_frontend_retries_and_says_why() {
        let path = sock("cli");
        let mut port = VhostUserPort::new(VhostUserConfig::new("v", &path, Role::Client)).unwrap();
        port.poll_control();
        assert_eq!(port.link(), LinkState::Down);
        let d = port.describe();
        assert!(d.contains("connecting") && d.contains("connect"), "{d}");
        assert_eq!(port.errors().connects, 0);
    }

    #[test]
    fn frontend_that_hangs_up_mid_handshake_is_a_disconnect() {
        let path = sock("hup");
        let mut port = VhostUserPort::new(VhostUserConfig::new("v", &path, Role::Server)).unwrap();
        let s = std::os::unix::net::UnixStream::connect(&path).unwrap();
        port.poll_control();
        assert_eq!(port.errors().connects, 1);
        // Half a message header, then hang up.
        std::io::Write::write_all(&mut &s, &[1, 0, 0]).unwrap();
        drop(s);
        let t0 = Instant::now();
        while port.errors().disconnects == 0 {
            port.poll_control();
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{}",
                port.describe()
            );
        }
        assert_eq!(port.link(), LinkState::Down);
        // Listening again: a new frontend is accepted.
        let _s2 = std::os::unix::net::UnixStream::connect(&path).unwrap();
        port.poll_control();
        assert_eq!(port.errors().connects, 2);
    }
}
