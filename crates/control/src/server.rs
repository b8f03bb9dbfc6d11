//! The control socket: [`ControlSocket::bind`] creates the Unix stream socket (parent directory
//! created, mode 0660, a stale socket file replaced, a live one refused), [`ControlSocket::serve`]
//! answers one JSON request per line with one JSON response per line until told to stop, and
//! [`request`] is the client side used by `vecswitch ctl`.
//!
//! Each connection gets its own thread; requests are handled one at a time under the controller's
//! lock, and the worker is reached only through the controller ([`crate::controller::Worker`]). A
//! client that sends garbage gets an error line; one that disconnects mid-request is forgotten.

use crate::controller::Controller;
use crate::protocol::{encode_request, parse_request, Request, Response, MAX_REQUEST_LINE};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Mode of the socket file: owner and group may connect, others not (`srw-rw----`).
pub const SOCKET_MODE: u32 = 0o660;
/// Most connections served at once; more get an error line and are closed.
pub const MAX_CONNECTIONS: usize = 64;
/// A connection idle this long (no complete request) is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
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
        if std::fs::symlink_metadata(path).is_ok() {
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
        while !stop.load(Ordering::Relaxed) {
            // About once a second (when idle), look whether the worker is still there.
            rounds += 1;
            if rounds >= 20 {
                rounds = 0;
                if !controller
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .worker_alive()
                {
                    return Served::WorkerGone;
                }
            }
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
                        let msg = format!("too many control connections (at most {MAX_CONNECTIONS}); try again later");
                        let _ = writeln!(stream, "{}", Response::err(msg).to_line());
                        continue;
                    }
                    let c = Arc::clone(&controller);
                    let guard = ConnCount::new(Arc::clone(&open));
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

impl Drop for ControlSocket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Counts a live connection; uncounts it when dropped (the connection's thread ended).
struct ConnCount(Arc<AtomicUsize>);

impl ConnCount {
    fn new(n: Arc<AtomicUsize>) -> ConnCount {
        n.fetch_add(1, Ordering::Relaxed);
        ConnCount(n)
    }
}

impl Drop for ConnCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Reads one line of at most `max` bytes. `Ok(None)` at end of stream (or a partial last line:
/// the client went away mid-request).
fn read_line(r: &mut impl BufRead, max: usize) -> io::Result<Option<Result<String, String>>> {
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
            return Ok(Some(Err(format!("request line longer than {max} bytes"))));
        }
        // End of stream without a newline: the client stopped mid-request.
        return Ok(None);
    }
    Ok(Some(
        String::from_utf8(buf).map_err(|_| "request is not UTF-8".to_string()),
    ))
}

/// Serves one connection: request lines in, response lines out.
fn serve_connection(stream: UnixStream, controller: &Mutex<Controller>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(IDLE_TIMEOUT));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let line = match read_line(&mut reader, MAX_REQUEST_LINE) {
            Ok(Some(l)) => l,
            Ok(None) | Err(_) => return,
        };
        let (resp, fatal) = match line {
            Err(msg) => (Response::err(format!("bad request: {msg}")), true),
            Ok(l) if l.trim().is_empty() => continue,
            Ok(l) => match parse_request(&l) {
                Err(e) => (Response::err(e.to_string()), false),
                Ok(req) => {
                    let mut c = controller.lock().unwrap_or_else(|p| p.into_inner());
                    (c.handle(req), false)
                }
            },
        };
        let mut text = resp.to_line();
        text.push('\n');
        if out.write_all(text.as_bytes()).is_err() || fatal {
            return;
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
    use crate::protocol::ShowWhat;
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
        let cfg = Config::from_toml(
            "[[port]]\nname = \"p0\"\ntype = \"af_packet\"\ninterface = \"veth0\"\n[[bridge]]\nname = \"br0\"\nports = [\"p0\"]\n",
            "t",
        )
        .unwrap();
        let c = Controller::start(
            Box::new(Local(Mutex::new(switch()))),
            Arc::from(factory()),
            cfg,
            None,
        )
        .unwrap();
        let sock = ControlSocket::bind(path).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let c = Arc::new(Mutex::new(c));
        let thread = std::thread::spawn(move || {
            sock.serve(c, &s2);
        });
        Running {
            stop,
            thread: Some(thread),
            path: path.to_path_buf(),
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
    fn requests_and_malformed_lines_over_the_socket() {
        let d = tmpdir("req");
        let srv = run_server(&d.0.join("ctl.sock"));
        let r = request(
            &srv.path,
            &Request::Show {
                what: ShowWhat::Ports,
                bridge: None,
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
                what: ShowWhat::Config,
                bridge: None,
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
    fn connections_beyond_the_limit_are_refused_with_a_message() {
        let d = tmpdir("many");
        let srv = run_server(&d.0.join("ctl.sock"));
        // Hold MAX_CONNECTIONS connections open (each proven served by one answer).
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
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
        assert!(line.contains("too many control connections"), "{line}");
        drop(held);
        // Once they are gone, requests are served again.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let line = raw(&srv.path, b"{\"cmd\":\"clear_counters\"}\n");
            if line.contains("\"ok\":true") {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{line}");
            std::thread::sleep(Duration::from_millis(20));
        }
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
