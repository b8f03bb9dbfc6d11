//! The metrics endpoint: Prometheus text exposition (format 0.0.4, which Prometheus, the
//! OpenMetrics parsers and `prometheus_client` read) of the switch's counters over HTTP, off by
//! default and turned on with `[switch] metrics_listen = "127.0.0.1:9482"`.
//!
//! - [`Snapshot`]: the counters taken in one worker call, between two poll iterations (so they are
//!   consistent with each other): ports, nodes, `show errors` (drop reasons and node counters),
//!   the buffer pool and the poll loop. [`Snapshot::render`] writes them under Prometheus names
//!   (`vecswitch_port_rx_packets_total{port="p0"}`; counters end in `_total`, times are seconds,
//!   <https://prometheus.io/docs/practices/naming/>).
//! - [`MetricsServer::start`]: one thread that accepts HTTP/1.x connections on the address and
//!   answers `GET /metrics`. It never holds the controller's lock and never makes the worker wait:
//!   the snapshot is a job queued to the worker (run between two polls, like every control call)
//!   and the server waits for it at most [`SNAPSHOT_DEADLINE`]; past that the scrape is answered
//!   `503` and at most one snapshot is ever outstanding (a stuck worker does not pile up jobs).
//!   Each connection gets [`IO_TIMEOUT`] to send its request and read the answer, so a slow or
//!   idle client costs one scrape, not the endpoint.
//! - [`SharedWorker`]: the switch handle shared by the controller and the metrics thread.
//!
//! The metrics (all labelled by what `show` names them):
//!
//! | name | type | labels |
//! |---|---|---|
//! | `vecswitch_port_{rx,tx}_{packets,bytes,dropped}_total` | counter | `port` |
//! | `vecswitch_port_link_up`, `vecswitch_port_admin_up` | gauge (0/1) | `port` |
//! | `vecswitch_node_{calls,vectors,packets,drops}_total`, `vecswitch_node_seconds_total` | counter | `node` |
//! | `vecswitch_errors_total` | counter | `node`, `reason` (every `show errors` line: drops by reason, node counters, port backend counters) |
//! | `vecswitch_buffers`, `vecswitch_buffers_in_use`, `vecswitch_buffers_free` | gauge | |
//! | `vecswitch_buffer_alloc_failures_total`, `vecswitch_buffer_double_frees_total` | counter | |
//! | `vecswitch_worker_{polls,idle_polls,rx_packets}_total`, `vecswitch_worker_busy_seconds_total` | counter | |
//! | `vecswitch_worker_max_poll_gap_seconds` | gauge | |

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use vecswitch_buffer::PoolStats;
use vecswitch_graph::ErrorCount;
use vecswitch_ports::LinkState;
use vecswitch_switch::{PortInfo, RuntimeInfo, Switch, SwitchHandle, WorkerGone};

use crate::controller::{Job, Worker};

/// Longest a scrape waits for the worker's snapshot before it is answered `503`.
pub const SNAPSHOT_DEADLINE: Duration = Duration::from_secs(2);
/// Longest a connection may take to send its request, and the server to write the answer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest request head read (request line and headers).
const MAX_REQUEST: usize = 8192;
/// How often the accept loop looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(50);
/// The exposition format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Errors starting the endpoint or taking a snapshot.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("switch.metrics_listen = {value:?}: not an address (accepted: IP:PORT, e.g. \"127.0.0.1:9482\" or \"[::1]:9482\")")]
    BadAddress { value: String },
    #[error("switch.metrics_listen = {addr}: cannot listen: {source}")]
    Listen {
        addr: String,
        #[source]
        source: io::Error,
    },
    #[error("the switch did not answer within {0:?} (busy or stuck worker)")]
    Deadline(Duration),
    #[error("a previous snapshot is still waiting for the worker")]
    Outstanding,
    #[error(transparent)]
    WorkerGone(#[from] WorkerGone),
    #[error("cannot start the metrics thread: {0}")]
    Thread(#[source] io::Error),
}

/// Parses a `metrics_listen` value (`IP:PORT`).
pub fn parse_listen(value: &str) -> Result<SocketAddr, MetricsError> {
    value.parse().map_err(|_| MetricsError::BadAddress {
        value: value.to_string(),
    })
}

/// The counters of one moment. See the module doc.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub ports: Vec<PortInfo>,
    pub runtime: RuntimeInfo,
    pub errors: Vec<ErrorCount>,
    pub buffers: PoolStats,
}

impl Snapshot {
    /// Takes the counters from `sw` (on the worker thread).
    pub fn take(sw: &Switch) -> Snapshot {
        Snapshot {
            ports: sw.show_ports(),
            runtime: sw.show_runtime(),
            errors: sw.show_errors(),
            buffers: sw.show_buffers(),
        }
    }

    /// The Prometheus text exposition of the snapshot.
    pub fn render(&self) -> String {
        let mut out = Text(String::with_capacity(4096));
        type PortGet = fn(&PortInfo) -> u64;
        let port_counters: [(&str, &str, PortGet); 6] = [
            ("rx_packets", "Frames received by the port.", |p| p.stats.rx_packets),
            ("rx_bytes", "Bytes received by the port.", |p| p.stats.rx_bytes),
            (
                "rx_dropped",
                "Frames the port could not take in (no buffer, bad descriptor, ring error).",
                |p| p.stats.rx_dropped,
            ),
            ("tx_packets", "Frames the port sent.", |p| p.stats.tx_packets),
            ("tx_bytes", "Bytes the port sent.", |p| p.stats.tx_bytes),
            (
                "tx_dropped",
                "Frames handed to the port that it could not send (ring full, link down, too long).",
                |p| p.stats.tx_dropped,
            ),
        ];
        for (name, help, get) in port_counters {
            let full = format!("vecswitch_port_{name}_total");
            out.head(&full, help, "counter");
            for p in &self.ports {
                out.sample(&full, &[("port", &p.name)], get(p) as f64);
            }
        }
        out.head(
            "vecswitch_port_link_up",
            "1 if the port's link is up (packets can flow).",
            "gauge",
        );
        for p in &self.ports {
            let up = matches!(p.link, LinkState::Up);
            out.sample(
                "vecswitch_port_link_up",
                &[("port", &p.name)],
                up as u8 as f64,
            );
        }
        out.head(
            "vecswitch_port_admin_up",
            "1 if the port is administratively up.",
            "gauge",
        );
        for p in &self.ports {
            out.sample(
                "vecswitch_port_admin_up",
                &[("port", &p.name)],
                p.admin_up as u8 as f64,
            );
        }

        type NodeGet = fn(&vecswitch_graph::NodeRuntime) -> f64;
        let node_counters: [(&str, &str, NodeGet); 5] = [
            ("calls", "Times the node ran.", |n| n.calls as f64),
            ("vectors", "Vectors the node processed.", |n| {
                n.vectors as f64
            }),
            ("packets", "Packets the node processed.", |n| {
                n.packets as f64
            }),
            ("drops", "Packets the node dropped (any reason).", |n| {
                n.drops as f64
            }),
            (
                "seconds",
                "Time spent in the node's process function.",
                |n| n.time_ns as f64 / 1e9,
            ),
        ];
        for (name, help, get) in node_counters {
            let full = format!("vecswitch_node_{name}_total");
            out.head(&full, help, "counter");
            for n in &self.runtime.nodes {
                out.sample(&full, &[("node", &n.name)], get(n));
            }
        }

        out.head(
            "vecswitch_errors_total",
            "Every `show errors` line: drops by reason, node counters and port backend counters.",
            "counter",
        );
        for e in &self.errors {
            out.sample(
                "vecswitch_errors_total",
                &[("node", &e.node), ("reason", &e.reason)],
                e.count as f64,
            );
        }

        let b = &self.buffers;
        for (name, help, v) in [
            ("vecswitch_buffers", "Packet buffers in the pool.", b.total),
            (
                "vecswitch_buffers_in_use",
                "Packet buffers in use.",
                b.in_use,
            ),
            ("vecswitch_buffers_free", "Packet buffers free.", b.free),
        ] {
            out.head(name, help, "gauge");
            out.sample(name, &[], v as f64);
        }
        for (name, help, v) in [
            (
                "vecswitch_buffer_alloc_failures_total",
                "Buffer allocations refused because the pool was empty.",
                b.alloc_failures,
            ),
            (
                "vecswitch_buffer_double_frees_total",
                "Frees of a buffer that was already free (a bug; never a crash).",
                b.double_frees,
            ),
        ] {
            out.head(name, help, "counter");
            out.sample(name, &[], v as f64);
        }

        let l = &self.runtime.loop_stats;
        for (name, help, v) in [
            (
                "vecswitch_worker_polls_total",
                "Poll iterations.",
                l.polls as f64,
            ),
            (
                "vecswitch_worker_idle_polls_total",
                "Poll iterations that received nothing.",
                l.idle_polls as f64,
            ),
            (
                "vecswitch_worker_rx_packets_total",
                "Packets received from all ports.",
                l.rx_packets as f64,
            ),
            (
                "vecswitch_worker_busy_seconds_total",
                "Time spent in iterations that received something.",
                l.busy_ns as f64 / 1e9,
            ),
        ] {
            out.head(name, help, "counter");
            out.sample(name, &[], v);
        }
        out.head(
            "vecswitch_worker_max_poll_gap_seconds",
            "Longest time between the starts of two poll iterations.",
            "gauge",
        );
        out.sample(
            "vecswitch_worker_max_poll_gap_seconds",
            &[],
            l.max_poll_gap_ns as f64 / 1e9,
        );
        out.0
    }
}

/// The exposition text being written.
struct Text(String);

impl Text {
    fn head(&mut self, name: &str, help: &str, kind: &str) {
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], v: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            self.0.push('{');
            for (i, (k, val)) in labels.iter().enumerate() {
                if i > 0 {
                    self.0.push(',');
                }
                let _ = write!(self.0, "{k}=\"{}\"", escape_label(val));
            }
            self.0.push('}');
        }
        let _ = writeln!(self.0, " {v}");
    }
}

/// A label value as the exposition format wants it: `\`, `"` and newline escaped.
fn escape_label(v: &str) -> String {
    v.replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A HELP text: `\` and newline escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', r"\\").replace('\n', r"\n")
}

/// The switch handle shared by the controller (as its [`Worker`]) and the metrics thread; the
/// worker stops when the last holder drops it.
#[derive(Debug, Clone)]
pub struct SharedWorker(pub Arc<SwitchHandle>);

impl Worker for SharedWorker {
    fn run(&self, job: Job) -> Result<(), WorkerGone> {
        self.0.post(job)
    }
    fn is_alive(&self) -> bool {
        self.0.is_running()
    }
}

/// Takes snapshots on the worker with a deadline; at most one outstanding.
struct Snapshotter {
    worker: Arc<SwitchHandle>,
    /// Set while a snapshot job is queued or running on the worker.
    outstanding: Arc<AtomicBool>,
}

impl Snapshotter {
    fn take(&self, deadline: Duration) -> Result<Snapshot, MetricsError> {
        if self.outstanding.swap(true, Ordering::AcqRel) {
            return Err(MetricsError::Outstanding);
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let worker = Arc::clone(&self.worker);
        let outstanding = Arc::clone(&self.outstanding);
        // `SwitchHandle::call` waits without a deadline, so it waits on a helper thread; the
        // metrics thread waits for the helper only until the deadline.
        let spawned = std::thread::Builder::new()
            .name("vecswitch-metrics-call".into())
            .spawn(move || {
                let r = worker.call(|sw: &mut Switch| Snapshot::take(sw));
                outstanding.store(false, Ordering::Release);
                let _ = tx.send(r);
            });
        if let Err(e) = spawned {
            self.outstanding.store(false, Ordering::Release);
            return Err(MetricsError::Thread(e));
        }
        match rx.recv_timeout(deadline) {
            Ok(r) => Ok(r?),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(MetricsError::Deadline(deadline)),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(MetricsError::WorkerGone(WorkerGone)),
        }
    }
}

/// The running endpoint; dropping it stops its thread (within [`STOP_POLL`] plus one scrape).
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `listen` and serves `GET /metrics` from snapshots of `worker`'s switch.
    pub fn start(listen: &str, worker: Arc<SwitchHandle>) -> Result<MetricsServer, MetricsError> {
        let addr = parse_listen(listen)?;
        let listener = TcpListener::bind(addr).map_err(|source| MetricsError::Listen {
            addr: listen.to_string(),
            source,
        })?;
        let addr = listener.local_addr().unwrap_or(addr);
        listener
            .set_nonblocking(true)
            .map_err(|source| MetricsError::Listen {
                addr: listen.to_string(),
                source,
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let snap = Snapshotter {
            worker,
            outstanding: Arc::default(),
        };
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("vecswitch-metrics".into())
            .spawn(move || serve(&listener, &snap, &flag))
            .map_err(MetricsError::Thread)?;
        Ok(MetricsServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the real port when `:0` was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: &TcpListener, snap: &Snapshotter, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = answer(stream, snap) {
                    tracing::debug!("metrics: connection ended: {e}");
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(STOP_POLL),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("vecswitch: metrics: accept failed: {e}");
                std::thread::sleep(STOP_POLL);
            }
        }
    }
}

/// The request line of an HTTP request head, or why there is none.
fn read_request_line(stream: &mut TcpStream) -> io::Result<String> {
    let started = Instant::now();
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && !buf.windows(2).any(|w| w == b"\n\n") {
        if buf.len() > MAX_REQUEST || started.elapsed() > IO_TIMEOUT {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long or too slow",
            ));
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buf);
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// What to answer to a request line: status, content type, body.
fn route(line: &str, snap: &Snapshotter) -> (&'static str, &'static str, String) {
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let text = "text/plain; charset=utf-8";
    match (method, path) {
        ("GET" | "HEAD", "/metrics") => match snap.take(SNAPSHOT_DEADLINE) {
            Ok(s) => ("200 OK", CONTENT_TYPE, s.render()),
            Err(e) => ("503 Service Unavailable", text, format!("{e}\n")),
        },
        ("GET" | "HEAD", "/") => (
            "200 OK",
            text,
            "vecswitch metrics: GET /metrics (Prometheus text format 0.0.4)\n".into(),
        ),
        ("GET" | "HEAD", _) => ("404 Not Found", text, format!("no {path}; try /metrics\n")),
        _ => (
            "405 Method Not Allowed",
            text,
            format!("method {method:?} not allowed; GET /metrics\n"),
        ),
    }
}

fn answer(mut stream: TcpStream, snap: &Snapshotter) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let line = read_request_line(&mut stream)?;
    let (status, ctype, body) = route(&line, snap);
    let head_only = line.starts_with("HEAD ");
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        out.push_str(&body);
    }
    stream.write_all(out.as_bytes())?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_ports::loopback::pair;
    use vecswitch_switch::SwitchConfig;

    fn switch() -> Switch {
        let mut sw = Switch::new(SwitchConfig {
            buffers: 256,
            ..Default::default()
        });
        let (a, _pa) = pair("p0", "p0-peer");
        let (b, _pb) = pair("p\"1", "p1-peer");
        sw.add_port("p0", Box::new(a)).unwrap();
        sw.add_port("p\"1", Box::new(b)).unwrap();
        sw
    }

    #[test]
    fn render_names_types_and_escapes() {
        let sw = switch();
        let text = Snapshot::take(&sw).render();
        assert!(text.contains("# TYPE vecswitch_port_rx_packets_total counter\n"));
        assert!(text.contains("vecswitch_port_rx_packets_total{port=\"p0\"} 0\n"));
        assert!(text.contains("vecswitch_port_rx_packets_total{port=\"p\\\"1\"} 0\n"));
        assert!(text.contains("vecswitch_buffers 256\n"), "{text}");
        assert!(text.contains("# TYPE vecswitch_buffers_in_use gauge\n"));
        assert!(text.contains("vecswitch_node_packets_total{node=\"ethernet-input\"} 0\n"));
        // Every sample line belongs to a declared family, and each family is declared once.
        let mut declared = std::collections::HashSet::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap();
                assert!(declared.insert(name.to_string()), "{name} declared twice");
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap();
                assert!(declared.contains(name), "{l}");
            }
        }
    }

    /// docs/grafana-dashboard.json queries only metrics the endpoint exports (a renamed metric
    /// cannot leave the dashboard silently empty).
    #[test]
    fn dashboard_uses_only_exported_metrics() {
        let dash = include_str!("../../../docs/grafana-dashboard.json");
        let v: serde_json::Value = serde_json::from_str(dash).expect("the dashboard is JSON");
        let text = Snapshot::take(&switch()).render();
        let exported: std::collections::HashSet<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .collect();
        let mut used = 0;
        for panel in v["panels"].as_array().unwrap() {
            for t in panel["targets"].as_array().unwrap() {
                let expr = t["expr"].as_str().unwrap();
                let names = expr
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| w.starts_with("vecswitch_"));
                for name in names {
                    assert!(
                        exported.contains(name),
                        "{name} (in {expr:?}) is not exported"
                    );
                    used += 1;
                }
            }
        }
        assert!(used >= 10, "{used}");
    }

    #[test]
    fn addresses_are_checked() {
        assert!(parse_listen("127.0.0.1:9482").is_ok());
        assert!(parse_listen("[::1]:9482").is_ok());
        for bad in ["", "localhost:9482", "127.0.0.1", ":9482"] {
            let e = parse_listen(bad).unwrap_err().to_string();
            assert!(e.contains("metrics_listen") && e.contains("IP:PORT"), "{e}");
        }
    }

    #[test]
    fn routes() {
        let worker = Arc::new(vecswitch_switch::spawn(switch()).unwrap());
        let snap = Snapshotter {
            worker,
            outstanding: Arc::default(),
        };
        assert_eq!(route("GET /metrics HTTP/1.1", &snap).0, "200 OK");
        assert_eq!(route("GET /nope HTTP/1.1", &snap).0, "404 Not Found");
        assert_eq!(
            route("POST /metrics HTTP/1.1", &snap).0,
            "405 Method Not Allowed"
        );
        // A snapshot still outstanding: the next scrape is refused, not queued behind it.
        snap.outstanding.store(true, Ordering::Relaxed);
        let (status, _, body) = route("GET /metrics HTTP/1.1", &snap);
        assert_eq!(status, "503 Service Unavailable");
        assert!(body.contains("still waiting"), "{body}");
    }

    /// A worker that does not come back to its queue (here: busy in a 3 s call) is answered with
    /// 503 after the deadline, and the endpoint serves again once the worker is back.
    #[test]
    fn a_busy_worker_gets_a_503_not_a_hang() {
        let worker = Arc::new(vecswitch_switch::spawn(switch()).unwrap());
        let w2 = Arc::clone(&worker);
        let busy = std::thread::spawn(move || {
            w2.call(|_| std::thread::sleep(Duration::from_secs(3)))
                .unwrap()
        });
        std::thread::sleep(Duration::from_millis(200));
        let snap = Snapshotter {
            worker,
            outstanding: Arc::default(),
        };
        let t = Instant::now();
        let e = snap.take(Duration::from_millis(500)).unwrap_err();
        assert!(matches!(e, MetricsError::Deadline(_)), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        busy.join().unwrap();
        // The late snapshot ran and cleared the flag; the next one succeeds.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match snap.take(Duration::from_secs(5)) {
                Ok(s) => {
                    assert_eq!(s.ports.len(), 2);
                    break;
                }
                Err(MetricsError::Outstanding) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
}
