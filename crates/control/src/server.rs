//! The control socket: [`ControlSocket::bind`] creates the Unix stream socket (parent directory
//! created, mode 0660, a stale socket file replaced, a live one refused), [`ControlSocket::serve`]
//! answers one JSON request per line with one JSON response per line until told to stop, and
//! [`request`] is the client side used by `vecswitch ctl`.
//!
//! Each connection gets its own thread; requests are handled one at a time under the controller's
//! lock, and the worker is reached only through the controller ([`crate::controller::Worker`]). A
//! client that sends garbage gets an error line; one that disconnects mid-request is forgotten.
//!
//! Safety (issue 14 item 1; the model is in docs/CONTROL.md "Security"): the socket file is 0660,
//! and besides that every connection's peer credentials (`SO_PEERCRED`) are checked: admitted are
//! uid 0, the switch's own uid, and members (primary or supplementary group) of the socket file's
//! group; anyone else gets an error line and a `tracing` warning naming their uid and pid. At most
//! [`MAX_CONNECTIONS`] connections are served at once and [`MAX_PER_UID`] per peer uid; a request
//! line must arrive complete within [`IDLE_TIMEOUT`] of the connection opening or of the previous
//! answer (so neither an idle nor a byte-a-second client holds a thread), a request that cannot
//! get the controller within [`REQUEST_DEADLINE`] is answered with a busy error, and one that
//! holds it waits for the switch's worker at most `controller::WORKER_DEADLINE` (a request past it
//! stays queued on the worker, and the controller refuses what needs the worker until it has run:
//! [`crate::controller`]).

use crate::controller::Controller;
use crate::protocol::{encode_request, parse_request, Request, Response, MAX_REQUEST_LINE};
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Mode of the socket file: owner and group may connect, others not (`srw-rw----`).
pub const SOCKET_MODE: u32 = 0o660;
/// Most connections served at once; more get an error line and are closed.
pub const MAX_CONNECTIONS: usize = 64;
/// Most connections served at once for one peer uid (root included).
pub const MAX_PER_UID: usize = 8;
/// A connection that has not sent a complete request line this long after opening or after its
/// previous answer is closed (idle, or trickling bytes).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a request waits for the controller (held by another request) before it is answered
/// with a busy error.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// Longest the server waits to write an answer to a client that does not read.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the accept loop looks at the stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);

/// Errors creating the control socket or talking to it.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("cannot create directory {dir} for the control socket: {source}")]
    Dir {
        dir: String,
        #[source]
        source: io::Error,
    },
    #[error("control socket {path} is in use by a running process (another `vecswitch run`?); pass another --socket")]
    InUse { path: String },
    #[error("control socket path {path} holds something that is not a socket (left as it is); accepted: a free path or a stale socket; pass another --socket")]
    NotASocket { path: String },
    #[error("cannot {what} control socket {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot connect to control socket {path}: {source} (is `vecswitch run` running with this socket?)")]
    Connect {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("bad answer from control socket {path}: {message}")]
    BadAnswer { path: String, message: String },
}

/// Why [`ControlSocket::serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// The stop flag was set (SIGINT/SIGTERM).
    Stopped,
    /// The switch's worker thread is gone (it panicked).
    WorkerGone,
}

/// A bound control socket; the socket file is removed when it is dropped.
#[derive(Debug)]
pub struct ControlSocket {
    path: PathBuf,
    listener: UnixListener,
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> SocketError {
    let path = path.display().to_string();
    move |source| SocketError::Io { what, path, source }
}

impl ControlSocket {
    /// Creates the socket at `path` with mode 0660.
    pub fn bind(path: &Path) -> Result<ControlSocket, SocketError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| SocketError::Dir {
                dir: dir.display().to_string(),
                source,
            })?;
        }
        if let Ok(m) = std::fs::symlink_metadata(path) {
            // Only a socket is ever replaced: a regular file, link or directory at the path is
            // someone else's, not a stale socket of ours.
            if !std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()) {
                return Err(SocketError::NotASocket {
                    path: path.display().to_string(),
                });
            }
            // Someone answering there: refuse. Nobody: a stale file from a crashed run; replace it.
            if UnixStream::connect(path).is_ok() {
                return Err(SocketError::InUse {
                    path: path.display().to_string(),
                });
            }
            std::fs::remove_file(path).map_err(io_err("remove stale", path))?;
        }
        // Bind under a temporary name, set the mode, then rename: the socket never exists at
        // `path` with the process umask's permissions.
        let tmp = {
            let mut s = path.as_os_str().to_owned();
            s.push(format!(".{}.tmp", std::process::id()));
            PathBuf::from(s)
        };
        let direct = tmp.as_os_str().len() > crate::validate::MAX_SOCKET_PATH;
        let bind_at = if direct { path } else { tmp.as_path() };
        let _ = std::fs::remove_file(bind_at);
        let listener = UnixListener::bind(bind_at).map_err(io_err("bind", path))?;
        std::fs::set_permissions(bind_at, std::fs::Permissions::from_mode(SOCKET_MODE))
            .map_err(io_err("set permissions of", path))?;
        if !direct {
            std::fs::rename(&tmp, path).map_err(io_err("rename into place", path))?;
        }
        listener
            .set_nonblocking(true)
            .map_err(io_err("configure", path))?;
        Ok(ControlSocket {
            path: path.to_path_buf(),
            listener,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Answers requests until `stop` is set or the switch's worker dies.
    pub fn serve(&self, controller: Arc<Mutex<Controller>>, stop: &AtomicBool) -> Served {
        let mut rounds = 0u32;
        let open = Arc::new(AtomicUsize::new(0));
        let per_uid: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
        let own_uid = nix::unistd::geteuid().as_raw();
        while !stop.load(Ordering::Relaxed) {
            // About once a second (when idle), look whether the worker is still there.
            rounds += 1;
            if rounds >= 20 {
                rounds = 0;
                // Not while a request holds the controller (it may wait for the worker for
                // seconds): new connections are accepted meanwhile, and looked at next round.
                let alive = match controller.try_lock() {
                    Ok(c) => c.worker_alive(),
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().worker_alive(),
                    Err(std::sync::TryLockError::WouldBlock) => true,
                };
                if !alive {
                    return Served::WorkerGone;
                }
            }
            match self.listener.accept() {
                Ok((stream, _)) => {
                    let _ = stream.set_nonblocking(false);
                    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
                    // The group is looked up per connection: an operator may chgrp the socket.
                    let group = std::fs::metadata(&self.path).map(|m| m.gid()).ok();
                    let peer = match admit(&stream, own_uid, group) {
                        Ok(peer) => peer,
                        Err(e) => {
                            refuse(stream, &e.to_string());
                            continue;
                        }
                    };
                    if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                        refuse(stream, &format!("too many control connections (at most {MAX_CONNECTIONS}); try again later"));
                        continue;
                    }
                    let Some(guard) = ConnCount::new(&open, &per_uid, peer.uid) else {
                        let msg = format!(
                            "too many control connections from uid {} (at most {MAX_PER_UID} per uid); close some and try again",
                            peer.uid
                        );
                        tracing::warn!(uid = peer.uid, pid = peer.pid, "control: {msg}");
                        eprintln!("vecswitch: control: pid {}: {msg}", peer.pid);
                        refuse(stream, &msg);
                        continue;
                    };
                    let c = Arc::clone(&controller);
                    let spawned = std::thread::Builder::new()
                        .name("vecswitch-ctl".into())
                        .spawn(move || {
                            let _guard = guard;
                            serve_connection(stream, &c)
                        });
                    if let Err(e) = spawned {
                        eprintln!("vecswitch: control: cannot start a connection thread: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(STOP_POLL),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("vecswitch: control: accept failed: {e}");
                    std::thread::sleep(STOP_POLL);
                }
            }
        }
        Served::Stopped
    }
}

/// Writes one error line to a refused client and closes the connection.
fn refuse(mut stream: UnixStream, msg: &str) {
    let _ = writeln!(stream, "{}", Response::err(msg.to_string()).to_line());
}

/// A connected peer's credentials (`SO_PEERCRED`, taken by the kernel at connect time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Peer {
    uid: u32,
    gid: u32,
    pid: i32,
}

/// The supplementary groups of process `pid` (the `Groups:` line of /proc/PID/status); empty if
/// it cannot be read (the process is gone).
fn supplementary_groups(pid: i32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("Groups:")).map(|g| {
                g.split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Why a connection was refused before its first request ([`admit`]); its text is the answer the
/// peer reads (`permission denied: ...`).
#[derive(Debug, thiserror::Error)]
enum Refused {
    /// `SO_PEERCRED` could not be read.
    #[error("permission denied: cannot read the peer credentials (SO_PEERCRED): {0}")]
    NoCredentials(#[source] nix::Error),
    /// A peer that is not root, the switch's user or in the socket's group.
    #[error("permission denied: uid {} (gid {}, pid {}) may not use this control socket; accepted are uid 0, the switch's uid {own_uid} and members of the socket's group (gid {group})", .peer.uid, .peer.gid, .peer.pid)]
    Peer {
        peer: Peer,
        own_uid: u32,
        /// The socket's group, or `(unknown)`.
        group: String,
    },
}

/// Admits uid 0, `own_uid` (the switch's) and members of `group` (the socket file's group);
/// anything else is refused with a message naming the peer and who is accepted, and logged.
fn admit(stream: &UnixStream, own_uid: u32, group: Option<u32>) -> Result<Peer, Refused> {
    use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};
    let cred = getsockopt(stream, PeerCredentials).map_err(|e| {
        let e = Refused::NoCredentials(e);
        tracing::warn!("control: {e}");
        e
    })?;
    let peer = Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        pid: cred.pid(),
    };
    let in_group =
        group.is_some_and(|g| peer.gid == g || supplementary_groups(peer.pid).contains(&g));
    if peer.uid == 0 || peer.uid == own_uid || in_group {
        return Ok(peer);
    }
    let e = Refused::Peer {
        peer,
        own_uid,
        group: group.map_or_else(|| "(unknown)".to_string(), |g| g.to_string()),
    };
    tracing::warn!(
        uid = peer.uid,
        gid = peer.gid,
        pid = peer.pid,
        "control: refused connection: {e}"
    );
    // The binary installs no tracing subscriber; stderr is where its other control messages go.
    eprintln!("vecswitch: control: refused connection: {e}");
    Err(e)
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Counts a live connection in the total and in its uid's count; uncounts it when dropped (the
/// connection's thread ended).
struct ConnCount {
    total: Arc<AtomicUsize>,
    per_uid: Arc<Mutex<HashMap<u32, usize>>>,
    uid: u32,
}

impl ConnCount {
    /// `None` if `uid` already has [`MAX_PER_UID`] connections.
    fn new(
        total: &Arc<AtomicUsize>,
        per_uid: &Arc<Mutex<HashMap<u32, usize>>>,
        uid: u32,
    ) -> Option<ConnCount> {
        {
            let mut m = per_uid.lock().unwrap_or_else(|p| p.into_inner());
            let n = m.entry(uid).or_insert(0);
            if *n >= MAX_PER_UID {
                return None;
            }
            *n += 1;
        }
        total.fetch_add(1, Ordering::Relaxed);
        Some(ConnCount {
            total: Arc::clone(total),
            per_uid: Arc::clone(per_uid),
            uid,
        })
    }
}

impl Drop for ConnCount {
    fn drop(&mut self) {
        self.total.fetch_sub(1, Ordering::Relaxed);
        let mut m = self.per_uid.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.uid) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.uid);
            }
        }
    }
}

/// A stream whose reads all end by one deadline: each read waits at most until `deadline`, then
/// fails with `TimedOut`. Reset before each request line.
struct DeadlineStream {
    stream: UnixStream,
    deadline: Instant,
}

impl Read for DeadlineStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no complete request in time",
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// A request line that is not text the protocol can read ([`read_line`]); the connection is then
/// closed after the answer (`bad request: ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum BadLine {
    #[error("request line longer than {max} bytes")]
    TooLong { max: usize },
    #[error("request is not UTF-8")]
    NotUtf8,
}

/// Reads one line of at most `max` bytes. `Ok(None)` at end of stream (or a partial last line:
/// the client went away mid-request).
fn read_line(r: &mut impl BufRead, max: usize) -> io::Result<Option<Result<String, BadLine>>> {
    let mut buf = Vec::new();
    let n = r
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        if buf.len() > max {
            return Ok(Some(Err(BadLine::TooLong { max })));
        }
        // End of stream without a newline: the client stopped mid-request.
        return Ok(None);
    }
    Ok(Some(String::from_utf8(buf).map_err(|_| BadLine::NotUtf8)))
}

/// Serves one connection: request lines in, response lines out.
fn serve_connection(stream: UnixStream, controller: &Mutex<Controller>) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(DeadlineStream {
        stream,
        deadline: Instant::now() + IDLE_TIMEOUT,
    });
    loop {
        reader.get_mut().deadline = Instant::now() + IDLE_TIMEOUT;
        let line = match read_line(&mut reader, MAX_REQUEST_LINE) {
            Ok(Some(l)) => l,
            Ok(None) | Err(_) => return,
        };
        let (resp, fatal) = match line {
            Err(e) => (Response::err(format!("bad request: {e}")), true),
            Ok(l) if l.trim().is_empty() => continue,
            Ok(l) => match parse_request(&l) {
                Err(e) => (Response::err(e.to_string()), false),
                Ok(req) => match lock_by(controller, Instant::now() + REQUEST_DEADLINE) {
                    Some(mut c) => (c.handle(req), false),
                    None => (
                        Response::err(format!(
                            "switch busy: another control request has held the controller for more than {} s; try again",
                            REQUEST_DEADLINE.as_secs()
                        )),
                        false,
                    ),
                },
            },
        };
        let mut text = resp.to_line();
        text.push('\n');
        if out.write_all(text.as_bytes()).is_err() || fatal {
            return;
        }
    }
}

/// Locks `m`, waiting at most until `deadline`.
fn lock_by<T>(m: &Mutex<T>, deadline: Instant) -> Option<std::sync::MutexGuard<'_, T>> {
    loop {
        match m.try_lock() {
            Ok(g) => return Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                if Instant::now() >= deadline {
                    return None;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

/// Sends one request to the socket at `path` and waits (up to `timeout`) for the answer.
pub fn request(path: &Path, req: &Request, timeout: Duration) -> Result<Response, SocketError> {
    let p = || path.display().to_string();
    let mut s =
        UnixStream::connect(path).map_err(|source| SocketError::Connect { path: p(), source })?;
    s.set_read_timeout(Some(timeout))
        .map_err(io_err("configure", path))?;
    s.set_write_timeout(Some(timeout))
        .map_err(io_err("configure", path))?;
    let mut line = encode_request(req);
    line.push('\n');
    s.write_all(line.as_bytes())
        .map_err(io_err("write to", path))?;
    let mut r = BufReader::new(s);
    let mut answer = String::new();
    r.read_line(&mut answer)
        .map_err(io_err("read from", path))?;
    if answer.is_empty() {
        return Err(SocketError::BadAnswer {
            path: p(),
            message: "the switch closed the connection without answering".into(),
        });
    }
    serde_json::from_str(&answer).map_err(|e| SocketError::BadAnswer {
        path: p(),
        message: format!("{e}: {}", answer.trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::testing::{factory, switch};
    use crate::config::Config;
    use crate::controller::Local;
    use std::os::unix::fs::FileTypeExt;

    struct Dir(PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn tmpdir(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("vsw-srv-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        Dir(d)
    }

    /// A server on a fake dataplane, running on a thread until the returned guard is dropped.
    struct Running {
        stop: Arc<AtomicBool>,
        thread: Option<std::thread::JoinHandle<()>>,
        path: PathBuf,
        controller: Arc<Mutex<Controller>>,
    }
    impl Drop for Running {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
        }
    }
    fn run_server(path: &Path) -> Running {
        run_server_on(path, Box::new(Local(Mutex::new(switch()))), None)
    }
    /// A server whose controller reaches the switch through `worker`, with `deadline` if given.
    fn run_server_on(
        path: &Path,
        worker: Box<dyn crate::controller::Worker>,
        deadline: Option<crate::controller::WorkerDeadline>,
    ) -> Running {
        let cfg = Config::from_toml(
            "[[port]]\nname = \"p0\"\ntype = \"af_packet\"\ninterface = \"veth0\"\n[[bridge]]\nname = \"br0\"\nports = [\"p0\"]\n",
            "t",
        )
        .unwrap();
        let mut c = Controller::start(worker, Arc::from(factory()), cfg, None).unwrap();
        if let Some(d) = deadline {
            c.set_worker_deadline(Some(d));
        }
        let sock = ControlSocket::bind(path).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let c = Arc::new(Mutex::new(c));
        let controller = Arc::clone(&c);
        let thread = std::thread::spawn(move || {
            sock.serve(c, &s2);
        });
        Running {
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
            controller,
        }
    }

    fn raw(path: &Path, bytes: &[u8]) -> String {
        let mut s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(bytes).unwrap();
        let mut r = BufReader::new(s);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        line
    }

    #[test]
    fn socket_is_0660_in_a_created_dir_and_removed_on_drop() {
        let d = tmpdir("perm");
        let path = d.0.join("sub/ctl.sock");
        {
            let s = ControlSocket::bind(&path).unwrap();
            let m = std::fs::metadata(s.path()).unwrap();
            assert!(m.file_type().is_socket());
            assert_eq!(m.permissions().mode() & 0o777, 0o660);
            // A second bind is refused while the first answers.
            assert!(matches!(
                ControlSocket::bind(&path),
                Err(SocketError::InUse { .. })
            ));
        }
        assert!(!path.exists());
    }

    #[test]
    fn stale_socket_file_is_replaced() {
        let d = tmpdir("stale");
        std::fs::create_dir_all(&d.0).unwrap();
        let path = d.0.join("ctl.sock");
        drop(UnixListener::bind(&path).unwrap()); // leaves a file nobody listens on
        assert!(path.exists());
        let s = ControlSocket::bind(&path).unwrap();
        assert_eq!(
            std::fs::metadata(s.path()).unwrap().permissions().mode() & 0o777,
            0o660
        );
    }

    #[test]
    fn anything_but_a_socket_at_the_path_is_refused_and_left_alone() {
        let d = tmpdir("notsock");
        std::fs::create_dir_all(&d.0).unwrap();
        let file = d.0.join("ctl.sock");
        std::fs::write(&file, "precious").unwrap();
        let e = ControlSocket::bind(&file).unwrap_err();
        assert!(matches!(e, SocketError::NotASocket { .. }), "{e}");
        assert!(e.to_string().contains("not a socket"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
        std::os::unix::fs::symlink(&file, d.0.join("link.sock")).unwrap();
        assert!(matches!(
            ControlSocket::bind(&d.0.join("link.sock")),
            Err(SocketError::NotASocket { .. })
        ));
        assert_eq!(std::fs::read(&file).unwrap(), b"precious");
    }

    #[test]
    fn requests_and_malformed_lines_over_the_socket() {
        let d = tmpdir("req");
        let srv = run_server(&d.0.join("ctl.sock"));
        let r = request(
            &srv.path,
            &Request::Show {
                what: "ports".into(),
                args: vec![],
            },
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(r.ok, "{r:?}");
        assert_eq!(r.data.unwrap()[0]["name"], "p0");
        let line = raw(&srv.path, b"{\"cmd\":\"trace_add\",\"count\":\"x\"}\n");
        let resp: Response = serde_json::from_str(&line).unwrap();
        assert!(!resp.ok);
        assert!(resp.error.unwrap().contains("count = \"x\""));
        let line = raw(&srv.path, b"\xff\xfe\n");
        assert!(line.contains("not UTF-8"), "{line}");
        // Several requests on one connection, blank lines ignored.
        let line = raw(&srv.path, b"\n\n{\"cmd\":\"clear_counters\"}\n");
        assert_eq!(line.trim(), r#"{"ok":true,"data":null}"#);
    }

    #[test]
    fn client_vanishing_mid_request_disturbs_nothing() {
        let d = tmpdir("vanish");
        let srv = run_server(&d.0.join("ctl.sock"));
        for _ in 0..5 {
            let mut s = UnixStream::connect(&srv.path).unwrap();
            s.write_all(b"{\"cmd\":\"bridge_member_rem").unwrap();
            drop(s);
        }
        // Connect and close without a byte.
        drop(UnixStream::connect(&srv.path).unwrap());
        let r = request(
            &srv.path,
            &Request::Show {
                what: "config".into(),
                args: vec![],
            },
            Duration::from_secs(10),
        )
        .unwrap();
        let cfg: Config = serde_json::from_value(r.data.unwrap()).unwrap();
        assert_eq!(cfg.bridges[0].ports, vec!["p0".to_string()]);
    }

    #[test]
    fn oversized_line_is_refused() {
        let d = tmpdir("big");
        let srv = run_server(&d.0.join("ctl.sock"));
        let mut big = vec![b'x'; MAX_REQUEST_LINE + 10];
        big.push(b'\n');
        let mut s = UnixStream::connect(&srv.path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The server may close before reading it all; the write error does not matter.
        let _ = s.write_all(&big);
        let mut line = String::new();
        let _ = BufReader::new(s).read_line(&mut line);
        assert!(line.contains("longer than"), "{line}");
        // And the server still answers.
        assert!(
            request(
                &srv.path,
                &Request::ClearCounters {},
                Duration::from_secs(10)
            )
            .unwrap()
            .ok
        );
    }

    #[test]
    fn connections_beyond_the_per_uid_limit_are_refused_with_a_message() {
        let d = tmpdir("many");
        let srv = run_server(&d.0.join("ctl.sock"));
        // Hold MAX_PER_UID connections open (each proven served by one answer).
        let mut held = Vec::new();
        for _ in 0..MAX_PER_UID {
            let mut s = UnixStream::connect(&srv.path).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(b"{\"cmd\":\"clear_counters\"}\n").unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert!(line.contains("\"ok\":true"), "{line}");
            held.push(s);
        }
        let line = raw(&srv.path, b"{\"cmd\":\"clear_counters\"}\n");
        assert!(
            line.contains("too many control connections from uid"),
            "{line}"
        );
        assert!(
            line.contains(&format!("at most {MAX_PER_UID} per uid")),
            "{line}"
        );
        drop(held);
        // Once they are gone, requests are served again.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let line = raw(&srv.path, b"{\"cmd\":\"clear_counters\"}\n");
            if line.contains("\"ok\":true") {
                break;
            }
            assert!(Instant::now() < deadline, "{line}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn conn_count_enforces_per_uid_and_releases_on_drop() {
        let total = Arc::new(AtomicUsize::new(0));
        let per: Arc<Mutex<HashMap<u32, usize>>> = Arc::default();
        let a: Vec<_> = (0..MAX_PER_UID)
            .map(|_| ConnCount::new(&total, &per, 7).unwrap())
            .collect();
        assert!(ConnCount::new(&total, &per, 7).is_none());
        let other = ConnCount::new(&total, &per, 8).unwrap();
        assert_eq!(total.load(Ordering::Relaxed), MAX_PER_UID + 1);
        drop(a);
        drop(other);
        assert_eq!(total.load(Ordering::Relaxed), 0);
        assert!(per.lock().unwrap().is_empty());
    }

    /// Reads until the server closes the connection; returns how long that took (panics after 60 s).
    fn closed_after(mut s: UnixStream, trickle: bool) -> Duration {
        let t0 = Instant::now();
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut buf = [0u8; 256];
        loop {
            assert!(t0.elapsed() < Duration::from_secs(60), "never closed");
            if trickle {
                // One byte of a request that never ends, every half second.
                if s.write_all(b"x").is_err() {
                    return t0.elapsed();
                }
            }
            match s.read(&mut buf) {
                Ok(0) => return t0.elapsed(),
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return t0.elapsed(),
            }
        }
    }

    #[test]
    fn idle_and_trickling_connections_are_closed_after_the_idle_timeout() {
        let d = tmpdir("idle");
        let srv = run_server(&d.0.join("ctl.sock"));
        let idle = UnixStream::connect(&srv.path).unwrap();
        let mut slow = UnixStream::connect(&srv.path).unwrap();
        slow.write_all(b"{\"cmd\":").unwrap();
        let h = std::thread::spawn(move || closed_after(slow, true));
        let t = closed_after(idle, false);
        assert!(t >= IDLE_TIMEOUT - Duration::from_millis(600), "{t:?}");
        let t = h.join().unwrap();
        assert!(t >= IDLE_TIMEOUT - Duration::from_millis(600), "{t:?}");
    }

    #[test]
    fn request_waiting_past_the_deadline_for_the_controller_gets_busy() {
        let d = tmpdir("busy");
        let srv = run_server(&d.0.join("ctl.sock"));
        let held = srv.controller.lock().unwrap();
        let line = raw(&srv.path, b"{\"cmd\":\"clear_counters\"}\n");
        assert!(line.contains("switch busy"), "{line}");
        drop(held);
        let line = raw(&srv.path, b"{\"cmd\":\"clear_counters\"}\n");
        assert!(line.contains("\"ok\":true"), "{line}");
    }

    /// Issue 14 item 1 over the socket: a change the stuck worker does not answer is answered
    /// within the deadline (plus slack) saying it stays queued; the next change gets a busy
    /// error at once while `show version` answers; once the worker runs, the change is applied.
    #[test]
    fn a_stuck_worker_gets_a_timeout_answer_then_busy_then_applies() {
        use crate::controller::stuck::Stuck;
        use crate::controller::WorkerDeadline;
        let d = tmpdir("stuck");
        let deadline = WorkerDeadline {
            start: Duration::from_millis(500),
            answer: Duration::from_secs(2),
        };
        let w = Stuck::new(Local(Mutex::new(switch())));
        let srv = run_server_on(&d.0.join("ctl.sock"), Box::new(w.clone()), Some(deadline));
        w.hold();
        let add = |name: &str| Request::Edit {
            verb: "bridge add".into(),
            args: vec![name.into()],
        };
        let t0 = Instant::now();
        let r = request(&srv.path, &add("br9"), Duration::from_secs(30)).unwrap();
        let took = t0.elapsed();
        let e = r.error.unwrap();
        assert!(
            e.contains("did not answer within") && e.contains("add bridge br9 stays queued"),
            "{e}"
        );
        assert!(
            took >= deadline.start && took < deadline.start + Duration::from_secs(10),
            "{took:?}"
        );
        let t0 = Instant::now();
        let e = request(&srv.path, &add("br8"), Duration::from_secs(30))
            .unwrap()
            .error
            .unwrap();
        assert!(
            e.contains("switch busy") && e.contains("add bridge br9"),
            "{e}"
        );
        assert!(t0.elapsed() < deadline.start, "busy at once");
        let version = || {
            let r = request(
                &srv.path,
                &Request::Show {
                    what: "version".into(),
                    args: vec![],
                },
                Duration::from_secs(30),
            )
            .unwrap();
            serde_json::from_value::<crate::protocol::VersionInfo>(r.data.unwrap()).unwrap()
        };
        let before = version();
        assert!(before.queued.is_some(), "{before:?}");
        assert_eq!(w.release(), 1);
        let after = version();
        assert_eq!(after.queued, None);
        assert_eq!(after.changes_applied, before.changes_applied + 1);
        assert_eq!(after.bridges, before.bridges + 1);
        assert!(
            request(&srv.path, &add("br8"), Duration::from_secs(30))
                .unwrap()
                .ok
        );
    }

    #[test]
    fn connect_error_names_the_path() {
        let e = request(
            Path::new("/nonexistent/vsw.sock"),
            &Request::ClearCounters {},
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/vsw.sock"), "{e}");
    }
}
