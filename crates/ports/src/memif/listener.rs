//! The server side's shared control socket: one [`Listener`] per socket path, shared by every
//! server-role [`MemifPort`](super::MemifPort) on that path through a process-wide registry, so one
//! socket file serves several interface ids (as DPDK's `memif_socket` and VPP's socket-id do).
//!
//! The listener accepts connections, greets each with HELLO, and reads its INIT: the INIT's
//! interface id picks the port, which takes the connection over ("handoff") the next time it
//! polls. An unknown id, or one whose port is connected already, gets a DISCONNECT with the reason.

use super::msg::{self, Msg, MSG_SIZE};
use super::sys::{self, Recv, SockAddr};
use super::MemifError;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// How long an accepted connection may take to send INIT (see `HANDSHAKE_TIMEOUT` in mod.rs).
const INIT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection whose INIT named a registered id, waiting for its port.
#[derive(Debug)]
pub struct Handoff {
    pub sock: OwnedFd,
    pub init: msg::Init,
}

#[derive(Debug)]
struct Slot {
    port: String,
    /// The port has a connection (handshaking or connected).
    busy: bool,
    hello: msg::Hello,
    handoff: Option<Handoff>,
}

#[derive(Debug)]
struct Pending {
    sock: OwnedFd,
    since: Instant,
}

/// One listening socket and the ids served on it.
#[derive(Debug)]
pub struct Listener {
    addr: SockAddr,
    fd: OwnedFd,
    pending: Vec<Pending>,
    slots: HashMap<u32, Slot>,
}

static REGISTRY: Mutex<Vec<(String, Weak<Mutex<Listener>>)>> = Mutex::new(Vec::new());

/// Registers `(path, id)` for `port`, creating the listening socket if this is the first id on
/// `path`. `hello` is the port's HELLO. HELLO goes out before the client names its id, so a shared
/// socket greets every client with the HELLO of its lowest registered id (see [`Listener::poll`]):
/// ports sharing a socket should agree on `ring_size_log2`.
pub fn register(
    path: &str,
    id: u32,
    port: &str,
    hello: msg::Hello,
) -> Result<Arc<Mutex<Listener>>, MemifError> {
    let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    reg.retain(|(_, w)| w.strong_count() > 0);
    if let Some(l) = reg
        .iter()
        .find(|(p, _)| p == path)
        .and_then(|(_, w)| w.upgrade())
    {
        {
            let mut g = l.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(s) = g.slots.get(&id) {
                return Err(MemifError::DuplicateId {
                    socket: path.to_string(),
                    id,
                    other: s.port.clone(),
                });
            }
            g.slots.insert(
                id,
                Slot {
                    port: port.to_string(),
                    busy: false,
                    hello,
                    handoff: None,
                },
            );
        }
        return Ok(l);
    }
    let addr = SockAddr::parse(path);
    let fd = sys::listen(&addr).map_err(|source| MemifError::Socket {
        socket: path.to_string(),
        source,
    })?;
    let mut slots = HashMap::new();
    slots.insert(
        id,
        Slot {
            port: port.to_string(),
            busy: false,
            hello,
            handoff: None,
        },
    );
    let l = Arc::new(Mutex::new(Listener {
        addr,
        fd,
        pending: Vec::new(),
        slots,
    }));
    reg.push((path.to_string(), Arc::downgrade(&l)));
    Ok(l)
}

fn reject(sock: &OwnedFd, reason: &str) {
    let m = Msg::Disconnect {
        code: 0,
        reason: reason.to_string(),
    };
    let _ = sys::send_msg(sock.as_fd(), &m.emit(), None);
}

impl Listener {
    /// Removes `id` (its port is going away); a connection waiting for it is closed.
    pub fn unregister(&mut self, id: u32) {
        if let Some(s) = self.slots.remove(&id) {
            if let Some(h) = s.handoff {
                reject(&h.sock, "Interface deleted");
            }
        }
    }

    /// Marks `id` as having a connection or not.
    pub fn set_busy(&mut self, id: u32, busy: bool) {
        if let Some(s) = self.slots.get_mut(&id) {
            s.busy = busy;
        }
    }

    /// Takes the connection waiting for `id`, if any.
    pub fn take(&mut self, id: u32) -> Option<Handoff> {
        self.slots.get_mut(&id).and_then(|s| s.handoff.take())
    }

    /// Accepts new connections, sends them HELLO, and routes their INIT by interface id.
    /// Never blocks.
    pub fn poll(&mut self) {
        loop {
            match sys::accept(self.fd.as_fd()) {
                Ok(Some(sock)) => {
                    // Every id on a socket advertises the same limits: take any slot's HELLO
                    // (DPDK's is fixed per process too). The one with the smallest id, for determinism.
                    let hello = self
                        .slots
                        .iter()
                        .min_by_key(|(id, _)| **id)
                        .map(|(_, s)| s.hello.clone());
                    let Some(hello) = hello else { break };
                    if sys::send_msg(sock.as_fd(), &Msg::Hello(hello).emit(), None).is_ok() {
                        self.pending.push(Pending {
                            sock,
                            since: Instant::now(),
                        });
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(socket = ?self.addr, error = %e, "memif accept failed");
                    break;
                }
            }
        }
        let now = Instant::now();
        let mut i = 0;
        while i < self.pending.len() {
            let mut buf = [0u8; MSG_SIZE + 1];
            let got = sys::recv_msg(self.pending[i].sock.as_fd(), &mut buf);
            let done = match got {
                Ok(Recv::WouldBlock) => now.duration_since(self.pending[i].since) > INIT_TIMEOUT,
                Ok(Recv::Closed) | Err(_) => true,
                Ok(Recv::Msg { len, .. }) => {
                    match Msg::parse(&buf[..len.min(buf.len())]) {
                        Ok(Msg::Init(init)) => {
                            let p = self.pending.swap_remove(i);
                            self.route(p.sock, init);
                            continue;
                        }
                        Ok(_) => reject(&self.pending[i].sock, "Unexpected message"),
                        Err(_) => reject(&self.pending[i].sock, "Invalid message"),
                    }
                    true
                }
            };
            if done {
                self.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn route(&mut self, sock: OwnedFd, init: msg::Init) {
        match self.slots.get_mut(&init.id) {
            None => reject(&sock, "ID not found"),
            Some(s) if s.busy || s.handoff.is_some() => reject(&sock, "Already connected"),
            Some(s) => s.handoff = Some(Handoff { sock, init }),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let SockAddr::Path(p) = &self.addr {
            let _ = std::fs::remove_file(p);
        }
    }
}
