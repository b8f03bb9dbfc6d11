//! End-to-end tests of `vecswitch run` and `vecswitch ctl`: a real switch process with memif server
//! ports (no traffic needs a peer; one test connects a memif client from this process), driven
//! through the control socket. Every switch process is stopped by a Drop guard, every temporary
//! directory removed, even when a test fails.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use vecswitch_testsupport::{RunningSwitch, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

fn ctl_at(socket: &Path, words: &str) -> Output {
    Command::new(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words.split_whitespace())
        .output()
        .expect("run vecswitch ctl")
}

/// Three memif server ports on one socket (ids 0..2), an E-Line p0<->p1, a bridge with p2.
fn base_config(d: &TempDir) -> String {
    let memif = d.path("memif.sock");
    format!(
        r#"
[switch]
buffers = 4096
mac_table_entries = 4096
capture_dir = "{cap}"

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

[[port]]
name = "p2"
type = "memif"
socket = "{m}"
id = 2

[[xconnect]]
ports = ["p0", "p1"]

[[bridge]]
name = "br0"
ports = ["p2"]
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:01"
  port = "p2"
"#,
        m = memif.display(),
        cap = d.dir().display()
    )
}

fn start(tag: &str) -> (TempDir, RunningSwitch, PathBuf) {
    let d = TempDir::new(tag);
    let cfg = d.path("switch.toml");
    std::fs::write(&cfg, base_config(&d)).unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    (d, sw, cfg)
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn control_socket_is_0660_and_shows_work() {
    let (_d, sw, _) = start("show");
    let m = std::fs::metadata(sw.socket()).unwrap();
    assert!(m.file_type().is_socket());
    assert_eq!(
        m.permissions().mode() & 0o777,
        0o660,
        "socket must not be world-accessible"
    );

    let ports = sw.ok("show ports");
    let lines: Vec<&str> = ports.lines().collect();
    assert!(
        lines[0].starts_with("Name") && lines[0].contains("RX packets"),
        "{ports}"
    );
    assert!(
        lines[1].starts_with("p0") && lines[1].contains("xconnect -> p1"),
        "{ports}"
    );
    assert!(
        lines[3].starts_with("p2") && lines[3].contains("bridge br0"),
        "{ports}"
    );

    let rt = sw.ok("show runtime");
    assert!(
        rt.contains("Name") && rt.contains("Calls") && rt.contains("Vectors/Call"),
        "{rt}"
    );
    assert!(rt.contains("ethernet-input"), "{rt}");

    let mac = sw.ok("show mac br0");
    assert!(
        mac.contains("02:00:00:00:00:01") && mac.contains("static"),
        "{mac}"
    );
    assert!(sw.ok("show bridge").contains("br0"));
    assert!(sw.ok("show buffers").contains("4096"));
    let v = sw.json("show version");
    assert_eq!(v["ports"], 3);
    assert_eq!(
        v["changes_applied"],
        3 + 1 + 1 + 1 + 2,
        "3 ports, a bridge, a member, a static MAC, 2 directions"
    );
    assert!(v["config"].as_str().unwrap().ends_with("switch.toml"));
    assert!(sw.ok("show version").starts_with("vecswitch "));
    assert!(sw.ok("show xconnect").contains("p0    p1"));

    let v = sw.json("show ports");
    assert_eq!(names(&v), ["p0", "p1", "p2"]);
    assert_eq!(
        v[0]["link"], "down",
        "a memif server with no peer stays down"
    );
    assert_eq!(sw.json("show buffers")["total"], 4096);
}

#[test]
fn runtime_changes_are_validated_like_the_file() {
    let (d, sw, _) = start("edit");
    let m = d.path("memif.sock");
    assert_eq!(
        sw.ok(&format!("port add p3 memif socket={} id=3", m.display()))
            .trim(),
        "add memif port p3"
    );
    assert_eq!(
        sw.ok("bridge member add br0 p3").trim(),
        "add port p3 to bridge br0"
    );
    assert_eq!(
        sw.json("show bridge br0")[0]["members"],
        serde_json::json!(["p2", "p3"])
    );

    // p0 is cross-connected: refused with the field, value and reason; nothing changes.
    let e = sw.fails("bridge member add br0 p0");
    assert!(
        e.contains("bridge[0].ports[2] = \"p0\"") && e.contains("xconnect[0]"),
        "{e}"
    );
    assert_eq!(
        sw.json("show bridge br0")[0]["members"],
        serde_json::json!(["p2", "p3"])
    );

    let e = sw.fails("mac add br0 01:00:5e:00:00:01 p3");
    assert!(e.contains("static_mac[1].mac"), "{e}");
    sw.ok("mac add br0 02:00:00:00:00:33 p3");
    assert_eq!(
        sw.json("show mac br0")["entries"].as_array().unwrap().len(),
        2
    );
    sw.ok("mac del br0 02:00:00:00:00:33");
    assert_eq!(sw.ok("mac flush br0").trim(), "0 learned entries flushed");
    assert_eq!(
        sw.json("show mac br0")["entries"].as_array().unwrap().len(),
        1,
        "the static entry stays"
    );
    assert!(sw.fails("mac flush nob").contains("bridges are: br0"));

    sw.ok("bridge add br1 --no-learn --mac-age 0");
    let b = sw.json("show bridge br1");
    assert_eq!(b[0]["settings"]["learn"], false);
    assert_eq!(b[0]["settings"]["mac_age_s"], 0);
    sw.ok("bridge member del br0 p3");
    sw.ok("bridge member add br1 p3");
    sw.ok("bridge del br1");
    sw.ok("port del p3");
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "p2"]);

    sw.ok("xconnect del p0");
    assert_eq!(
        sw.json("show xconnect"),
        serde_json::json!([{"from": "p1", "to": "p0"}])
    );
    sw.ok("xconnect add p0 p1");
    assert_eq!(sw.json("show xconnect").as_array().unwrap().len(), 2);

    sw.ok("port down p2");
    assert_eq!(sw.json("show ports")[2]["admin_up"], false);
    sw.ok("trace add 10");
    sw.ok("clear counters");
    assert!(sw.fails("show mac nobridge").contains("nobridge"));
    assert!(sw.fails("frobnicate").contains("unknown command"));
}

#[test]
fn invalid_reload_is_rejected_whole_and_changes_nothing() {
    let (d, sw, cfg) = start("badreload");
    let before: Vec<String> = [
        "show ports",
        "show bridge",
        "show mac",
        "show xconnect",
        "show config",
    ]
    .iter()
    .map(|c| sw.ok(c))
    .collect();

    // Several errors at once: all named, none applied (the valid new port p9 is not added either).
    let bad = d.path("bad.toml");
    let mut text = base_config(&d);
    text = text.replace("id = 1\n", "id = 1\nring_size = 1000\n");
    text.push_str(&format!(
        "\n[[port]]\nname = \"p9\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 9\n\n[[bridge]]\nname = \"br2\"\nports = [\"ghost\"]\n",
        d.path("memif.sock").display()
    ));
    std::fs::write(&bad, text).unwrap();
    let e = sw.fails(&format!("reload {}", bad.display()));
    assert!(e.contains("port[1].ring_size = 1000"), "{e}");
    assert!(e.contains("bridge[1].ports[0] = \"ghost\""), "{e}");

    // Not even TOML.
    std::fs::write(&bad, "[[port]\nname=").unwrap();
    assert!(sw
        .fails(&format!("reload {}", bad.display()))
        .contains("bad.toml"));
    // [switch] cannot change without a restart.
    std::fs::write(
        &bad,
        base_config(&d).replace("buffers = 4096", "buffers = 8192"),
    )
    .unwrap();
    assert!(sw
        .fails(&format!("reload {}", bad.display()))
        .contains("switch.buffers"));

    let after: Vec<String> = [
        "show ports",
        "show bridge",
        "show mac",
        "show xconnect",
        "show config",
    ]
    .iter()
    .map(|c| sw.ok(c))
    .collect();
    assert_eq!(before, after);
    // The original file still reloads to "no change".
    assert_eq!(
        sw.ok(&format!("reload {}", cfg.display())).trim(),
        "no change"
    );
}

#[test]
fn valid_reload_applies_only_the_difference() {
    let (d, sw, cfg) = start("reload");
    sw.ok("mac add br0 02:00:00:00:00:44 p2"); // a run-time change the file does not have
    let m = d.path("memif.sock");
    let text = base_config(&d).replace("ports = [\"p2\"]", "ports = [\"p2\", \"p3\"]")
        + &format!(
            "\n[[port]]\nname = \"p3\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 3\n",
            m.display()
        );
    std::fs::write(&cfg, text).unwrap();
    let plan = sw.ok("reload --dry-run");
    assert!(plan.contains("would add memif port p3"), "{plan}");
    assert_eq!(
        names(&sw.json("show ports")),
        ["p0", "p1", "p2"],
        "a dry run changes nothing"
    );
    let out = sw.ok("reload");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "remove static mac 02:00:00:00:00:44 from bridge br0",
            "add memif port p3",
            "add port p3 to bridge br0",
        ],
        "{out}"
    );
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "p2", "p3"]);
    let macs = sw.json("show mac br0")["entries"].clone();
    assert_eq!(macs.as_array().unwrap().len(), 1);
    assert_eq!(macs[0]["mac"], "02:00:00:00:00:01");
}

use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};

/// A memif client in this process, connected to the switch's memif server port with `id`.
fn memif_peer(d: &TempDir, id: u32) -> MemifPort {
    let m = d.path("memif.sock");
    let mut peer = MemifPort::new(MemifConfig::new(
        "peer",
        &m.display().to_string(),
        id,
        Role::Client,
    ))
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while peer.link() != LinkState::Up {
        assert!(
            Instant::now() < deadline,
            "memif client did not connect to id {id}"
        );
        peer.poll_control();
        std::thread::sleep(Duration::from_millis(5));
    }
    peer
}

/// Sends `n` 64-byte frames from `peer` and waits until port `index` of the switch counts them.
fn send_frames(sw: &RunningSwitch, peer: &mut MemifPort, index: usize, n: u64) {
    let mut pool = Pool::new(256);
    let mut frame = vec![0u8; 64];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 3]);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    let rx = |sw: &RunningSwitch| {
        sw.json("show ports")[index]["stats"]["rx_packets"]
            .as_u64()
            .unwrap()
    };
    let target = rx(sw) + n;
    let mut sent = 0;
    while sent < n {
        let h = pool.alloc().unwrap();
        assert!(pool.write_packet(h, &frame));
        sent += peer.tx_burst(&mut pool, &[h]) as u64;
        pool.free(h);
        peer.poll_control();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while rx(sw) < target {
        assert!(
            Instant::now() < deadline,
            "port {index} did not receive the {n} frames"
        );
        peer.poll_control();
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A memif client in this process sends to p0; a reload that adds a port must keep p0's connection
/// and counters (the port object is not re-created).
#[test]
fn reload_keeps_unchanged_ports_connected_with_their_counters() {
    let (d, sw, cfg) = start("keep");
    let m = d.path("memif.sock");
    let mut peer = memif_peer(&d, 0);
    send_frames(&sw, &mut peer, 0, 10);
    let connects = peer.connects();
    assert_eq!(sw.json("show ports")[0]["link"], "up");

    let text = base_config(&d)
        + &format!(
            "\n[[port]]\nname = \"p4\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 4\n",
            m.display()
        );
    std::fs::write(&cfg, text).unwrap();
    assert_eq!(sw.ok("reload").trim(), "add memif port p4");
    for _ in 0..20 {
        peer.poll_control();
        std::thread::sleep(Duration::from_millis(5));
    }
    let p0 = &sw.json("show ports")[0];
    assert_eq!(p0["stats"]["rx_packets"], 10, "{p0}");
    assert_eq!(p0["link"], "up", "{p0}");
    assert_eq!(peer.link(), LinkState::Up);
    assert_eq!(peer.connects(), connects, "the peer was not reconnected");
}

#[test]
fn malformed_requests_get_errors_and_the_server_lives_on() {
    let (_d, sw, _) = start("garbage");
    let mut s = UnixStream::connect(sw.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"hello\n{\"cmd\":\"trace_add\",\"count\":\"lots\"}\n{\"cmd\":\"show\",\"what\":\"everything\"}\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut answers = Vec::new();
    for _ in 0..3 {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["ok"], false, "{v}");
        answers.push(v["error"].as_str().unwrap().to_string());
    }
    assert!(answers[0].contains("not a JSON object"), "{answers:?}");
    assert!(answers[1].contains("count = \"lots\""), "{answers:?}");
    assert!(answers[2].contains("what = \"everything\""), "{answers:?}");
    // A client that leaves mid-request.
    let mut half = UnixStream::connect(sw.socket()).unwrap();
    half.write_all(b"{\"cmd\":\"port_del").unwrap();
    drop(half);
    drop(s);
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "p2"]);
}

#[test]
fn sigterm_exits_cleanly_and_removes_the_socket() {
    let (_d, sw, _) = start("term");
    let socket = sw.socket().to_path_buf();
    let (status, stderr) = sw.terminate();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(!socket.exists(), "socket file left behind");
}

#[test]
fn second_switch_on_the_same_socket_is_refused() {
    let (d, sw, cfg) = start("twice");
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--socket")
        .arg(sw.socket())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("in use"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The first one still answers.
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "p2"]);
    drop(d);
}

#[test]
fn invalid_config_fails_at_start_with_every_error() {
    let d = TempDir::new("badstart");
    let cfg = d.path("bad.toml");
    std::fs::write(
        &cfg,
        "[[port]]\nname = \"p0\"\ntype = \"memif\"\nsocket = \"/tmp/x.sock\"\nring_size = 3\n[[xconnect]]\nports = [\"p0\", \"nope\"]\n",
    )
    .unwrap();
    let socket = d.path("ctl.sock");
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--socket")
        .arg(&socket)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("port[0].ring_size = 3"), "{e}");
    assert!(e.contains("xconnect[0].ports[1] = \"nope\""), "{e}");
    assert!(!socket.exists());
    // And ctl without a switch says where it tried.
    let out = ctl_at(&socket, "show ports");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&socket.display().to_string()));
}

#[test]
fn worker_cpu_is_pinned_or_refused_by_name() {
    let d = TempDir::new("cpu");
    let cfg = d.path("cpu.toml");
    std::fs::write(
        &cfg,
        base_config(&d).replace("[switch]\n", "[switch]\nworker_cpu = 0\n"),
    )
    .unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "p2"]);
    let (status, stderr) = sw.terminate();
    assert!(status.success(), "{stderr}");

    std::fs::write(
        &cfg,
        base_config(&d).replace("[switch]\n", "[switch]\nworker_cpu = 4095\n"),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--socket")
        .arg(d.path("ctl2.sock"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("switch.worker_cpu = 4095"), "{e}");
    assert!(
        !d.path("ctl2.sock").exists(),
        "socket left behind after a failed start"
    );
}

#[test]
fn ctl_reads_a_script_from_stdin() {
    let (_d, sw, _) = start("script");
    let mut child = Command::new(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(sw.socket())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"# set up a second bridge\nbridge add br7 --no-flood\n\nshow bridge br7\nbridge member add br7 ghost\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        !out.status.success(),
        "one line failed, so the exit status is non-zero"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("add bridge br7") && stdout.contains("br7"),
        "{stdout}"
    );
    assert!(
        stderr.contains("line 5") && stderr.contains("ghost"),
        "{stderr}"
    );
    assert_eq!(sw.json("show bridge br7")[0]["settings"]["flood"], false);
}

/// Renaming a memif port keeps its (socket, id), which the old port holds until it is deleted:
/// the new one is opened after the old one is closed.
#[test]
fn reload_renaming_a_port_reuses_its_memif_id() {
    let (d, sw, cfg) = start("rename");
    std::fs::write(&cfg, base_config(&d).replace("\"p2\"", "\"edge2\"")).unwrap();
    let out = sw.ok("reload");
    assert!(
        out.contains("delete port p2") && out.contains("add memif port edge2"),
        "{out}"
    );
    assert_eq!(names(&sw.json("show ports")), ["p0", "p1", "edge2"]);
    assert_eq!(sw.json("show mac br0")["entries"][0]["port"], "edge2");
    // A real conflict (two ports on one memif id, in one file) is caught by validation instead.
    let text = base_config(&d)
        + &format!(
            "\n[[port]]\nname = \"dup\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 0\n",
            d.path("memif.sock").display()
        );
    std::fs::write(&cfg, text).unwrap();
    assert!(sw.fails("reload").contains("port[3].id = 0"));
}

#[test]
fn capture_writes_a_pcap_of_what_the_port_receives() {
    let (d, sw, _) = start("capture");
    let file = d.path("p0.pcap");
    sw.ok(&format!("capture p0 {} 3", file.display()));
    let ports = sw.ok("show ports");
    assert!(
        ports.contains("Capture") && ports.contains("p0.pcap 0"),
        "{ports}"
    );
    let mut peer = memif_peer(&d, 0);
    send_frames(&sw, &mut peer, 0, 5);
    let out = sw.ok("capture stop p0");
    assert!(out.contains("3 frames captured"), "{out}");
    // pcap: 24-byte global header, then per frame a 16-byte record header and the 64 bytes.
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes.len(), 24 + 3 * (16 + 64));
    let magic = u32::from_le_bytes(bytes[..4].try_into().unwrap());
    assert!(
        magic == 0xa1b2_c3d4 || magic == 0xa1b2_3c4d,
        "pcap magic (µs or ns), got {magic:#x}"
    );
    assert!(sw.fails("capture stop p0").contains("p0"));
    assert!(sw
        .fails("capture nope /tmp/x.pcap")
        .contains("interfaces are: p0, p1, p2"));
}

#[test]
fn learned_macs_show_and_flush() {
    let (d, sw, _) = start("learn");
    let mut peer = memif_peer(&d, 2);
    send_frames(&sw, &mut peer, 2, 3);
    let macs = sw.json("show mac br0")["entries"].clone();
    let learned: Vec<&Value> = macs
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["static"] == false)
        .collect();
    assert_eq!(learned.len(), 1, "{macs}");
    assert_eq!(learned[0]["mac"], "02:00:00:00:00:03");
    assert_eq!(learned[0]["port"], "p2");
    assert!(sw.ok("show mac").contains("dynamic"));
    assert_eq!(
        sw.ok("mac flush br0 p2").trim(),
        "1 learned entries flushed"
    );
    let macs = sw.json("show mac br0")["entries"].clone();
    assert_eq!(
        macs.as_array().unwrap().len(),
        1,
        "only the static entry is left: {macs}"
    );
    assert_eq!(macs[0]["static"], true);
}

#[test]
fn ctl_finds_the_socket_through_the_environment() {
    let (_d, sw, _) = start("env");
    let out = Command::new(BIN)
        .args(["ctl", "--json", "show", "buffers"])
        .env("VECSWITCH_SOCKET", sw.socket())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["data"]["total"], 4096);
}

#[test]
fn save_mtu_and_show_interfaces_through_ctl() {
    let (d, sw, cfg) = start("save");
    // A registered ctl command (the mtu feature) and a registered show.
    let out = sw.ok("mtu p2 1500 check");
    assert_eq!(out, "set mtu 1500 on p2 (checked)\n");
    let table = sw.ok("show interfaces");
    let p2 = table.lines().find(|l| l.starts_with("p2 ")).unwrap();
    assert!(
        p2.contains(" 1500 ") && p2.ends_with("mtu-check"),
        "{table}"
    );
    let e = sw.fails("mtu p2 12");
    assert!(
        e.contains("mtu[0].mtu = 12") && e.contains("68 to 65535"),
        "{e}"
    );
    // save: the running config (file + the ctl change) replaces the file; reloading it is a no-op.
    let out = sw.ok("save");
    assert!(
        out.starts_with(&format!("saved the running config to {}", cfg.display())),
        "{out}"
    );
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.contains("[[mtu]]") && text.contains("interface = \"p2\""),
        "{text}"
    );
    assert_eq!(sw.ok("reload"), "no change\n");
    // To another file.
    let other = d.path("copy.toml");
    sw.ok(&format!("save {}", other.display()));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), text);
}
