//! The metrics endpoint end to end (issue 14 item 5): a real `vecswitch run` with
//! `[switch] metrics_listen`, traffic from a memif client in this process, scraped by a real
//! Prometheus client — Python's `prometheus_client` text parser (Debian `python3-prometheus-client`,
//! installed by scripts/setup.sh) — and the values compared with `ctl show`. The switch process is
//! stopped by a Drop guard and the temporary directory removed, even when the test fails.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{RunningSwitch, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
/// Debian's python, where `python3-prometheus-client` installs (a pyenv shim first on PATH would
/// not see it).
const PYTHON: &str = "/usr/bin/python3";

/// A free TCP port on loopback (bound, read, released; the switch binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn memif_peer(sock: &Path, id: u32) -> MemifPort {
    let mut peer = MemifPort::new(MemifConfig::new(
        "peer",
        &sock.display().to_string(),
        id,
        Role::Client,
    ))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while peer.link() != LinkState::Up {
        assert!(
            Instant::now() < deadline,
            "memif client {id} did not connect"
        );
        peer.poll_control();
        std::thread::sleep(Duration::from_millis(5));
    }
    peer
}

/// Sends each frame of `frames` once from `peer`.
fn send(peer: &mut MemifPort, frames: &[Vec<u8>]) {
    let mut pool = Pool::new(256);
    for f in frames {
        let h = pool.alloc().unwrap();
        assert!(pool.write_packet(h, f));
        let deadline = Instant::now() + Duration::from_secs(10);
        while peer.tx_burst(&mut pool, &[h]) == 0 {
            assert!(Instant::now() < deadline, "memif ring stayed full");
            peer.poll_control();
            std::thread::sleep(Duration::from_millis(1));
        }
        pool.free(h);
    }
}

fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f
}

/// Scrapes `url` with Python's prometheus_client parser; returns `sample name{labels}` → value,
/// with labels sorted as `k="v",...`, and the family types as `# TYPE name` → type.
fn scrape(url: &str) -> BTreeMap<String, f64> {
    let script = r##"
import sys, json, urllib.request
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit("python3-prometheus-client is missing: run scripts/setup.sh (apt-get install python3-prometheus-client)")
resp = urllib.request.urlopen(sys.argv[1], timeout=10)
ctype = resp.headers.get("Content-Type", "")
text = resp.read().decode()
out = {"# content-type " + ctype: 1.0}
for fam in text_string_to_metric_families(text):
    out["# TYPE " + fam.name] = {"counter": 1.0, "gauge": 2.0}.get(fam.type, 0.0)
    for s in fam.samples:
        labels = ",".join('%s="%s"' % (k, v) for k, v in sorted(s.labels.items()))
        out[s.name + ("{" + labels + "}" if labels else "")] = s.value
print(json.dumps(out))
"##;
    let out = Command::new(PYTHON)
        .args(["-c", script, url])
        .output()
        .unwrap_or_else(|e| {
            panic!("{PYTHON} could not run ({e}): install python3 (scripts/setup.sh)")
        });
    assert!(
        out.status.success(),
        "scrape failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_running_switch_is_scraped_by_prometheus_client_and_agrees_with_show() {
    let d = TempDir::new("scrape");
    let memif = d.path("memif.sock");
    let port = free_port();
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[switch]
buffers = 4096
mac_table_entries = 4096
metrics_listen = "127.0.0.1:{port}"

[[port]]
name = "p0"
type = "memif"
socket = "{m}"
id = 0

[[port]]
name = "p1"
type = "memif"
socket = "{m}"
id = 1

[[bridge]]
name = "br0"
ports = ["p0", "p1"]
"#,
            m = memif.display()
        ),
    )
    .unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    let mut p0 = memif_peer(&memif, 0);
    let mut p1 = memif_peer(&memif, 1);

    // 40 good frames (4 stations, broadcast) and 7 with a multicast source, which ethernet-input
    // drops (`src-mac-multicast`).
    let good: Vec<Vec<u8>> = (0..40)
        .map(|i| frame([0xff; 6], [2, 0, 0, 0, 0, 1 + (i % 4) as u8]))
        .collect();
    let bad: Vec<Vec<u8>> = (0..7)
        .map(|_| frame([0xff; 6], [0x01, 0, 0x5e, 0, 0, 9]))
        .collect();
    send(&mut p0, &good);
    send(&mut p0, &bad);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ports = sw.json("show ports");
        let (rx0, tx1) = (
            ports[0]["stats"]["rx_packets"].as_u64().unwrap(),
            ports[1]["stats"]["tx_packets"].as_u64().unwrap(),
        );
        if rx0 == 47 && tx1 == 40 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "switch counted rx {rx0}, tx {tx1}"
        );
        p0.poll_control();
        p1.poll_control();
        std::thread::sleep(Duration::from_millis(20));
    }

    let url = format!("http://127.0.0.1:{port}/metrics");
    let m = scrape(&url);
    let get = |k: &str| {
        *m.get(k)
            .unwrap_or_else(|| panic!("no sample {k} in {m:#?}"))
    };
    assert_eq!(
        get("# content-type text/plain; version=0.0.4; charset=utf-8"),
        1.0
    );
    assert_eq!(get("# TYPE vecswitch_port_rx_packets"), 1.0, "a counter");
    assert_eq!(get("vecswitch_port_rx_packets_total{port=\"p0\"}"), 47.0);
    assert_eq!(get("vecswitch_port_tx_packets_total{port=\"p1\"}"), 40.0);
    assert_eq!(
        get("vecswitch_port_rx_bytes_total{port=\"p0\"}"),
        47.0 * 60.0
    );
    assert_eq!(get("vecswitch_port_link_up{port=\"p0\"}"), 1.0);
    assert_eq!(
        get("vecswitch_errors_total{node=\"ethernet-input\",reason=\"src-mac-multicast\"}"),
        7.0
    );
    assert_eq!(
        get("vecswitch_errors_total{node=\"l2-learn\",reason=\"learned\"}"),
        4.0
    );
    assert_eq!(get("vecswitch_node_packets_total{node=\"l2-learn\"}"), 40.0);
    assert_eq!(
        get("vecswitch_node_packets_total{node=\"ethernet-input\"}"),
        47.0
    );
    assert_eq!(get("# TYPE vecswitch_buffers_in_use"), 2.0, "a gauge");
    assert_eq!(get("vecswitch_buffers"), 4096.0);
    let in_use = get("vecswitch_buffers_in_use");
    assert_eq!(in_use + get("vecswitch_buffers_free"), 4096.0);
    assert!(get("vecswitch_worker_polls_total") > 0.0);
    // The same numbers as the control socket's `show`.
    let bufs = sw.json("show buffers");
    assert_eq!(bufs["total"], 4096);

    // Anything else than GET /metrics is refused with the right status, and the endpoint lives on.
    let status = |req: &str| {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.lines().next().unwrap_or("").to_string()
    };
    assert_eq!(
        status("GET /nope HTTP/1.1\r\n\r\n"),
        "HTTP/1.1 404 Not Found"
    );
    assert_eq!(
        status("DELETE /metrics HTTP/1.1\r\n\r\n"),
        "HTTP/1.1 405 Method Not Allowed"
    );
    // A client that connects and sends nothing is given up on; scrapes go on.
    let idle = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let m2 = scrape(&url);
    drop(idle);
    assert_eq!(m2["vecswitch_port_rx_packets_total{port=\"p0\"}"], 47.0);
}

#[test]
fn a_bad_metrics_address_is_refused_naming_the_field() {
    let d = TempDir::new("bad");
    let cfg = d.path("switch.toml");
    std::fs::write(&cfg, "[switch]\nmetrics_listen = \"localhost:9482\"\n").unwrap();
    let out = Command::new(BIN)
        .args(["run", "--check", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("switch.metrics_listen")
            && err.contains("localhost:9482")
            && err.contains("IP:PORT"),
        "{err}"
    );
}
