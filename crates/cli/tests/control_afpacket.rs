//! `vecswitch run` with AF_PACKET ports on veth pairs the test creates (needs root, as CI runs);
//! the guard deletes them whatever happens. No traffic is sent: these tests are about building
//! ports from config, re-creating them on reload, and refusing a missing interface.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("`ip` (iproute2) must be installed");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two veth pairs (`a`–`pa`, `b`–`pb`; the switch opens `a` and `b`, so bridging them makes no
/// loop) with IPv6 off so the kernel stays quiet, and a temporary directory; removed on drop.
struct Lab {
    a: String,
    b: String,
    dir: PathBuf,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let id = std::process::id() % 100_000;
        let lab = Lab {
            a: format!("vsc{id}{tag}a"),
            b: format!("vsc{id}{tag}b"),
            dir: std::env::temp_dir().join(format!("vsw-ctl-afp-{tag}-{id}")),
        };
        let _ = std::fs::remove_dir_all(&lab.dir);
        std::fs::create_dir_all(&lab.dir).unwrap();
        for end in [&lab.a, &lab.b] {
            let peer = format!("{end}p");
            ip(&["link", "add", end, "type", "veth", "peer", "name", &peer]);
            for dev in [end.as_str(), peer.as_str()] {
                let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1");
                ip(&["link", "set", dev, "up"]);
            }
        }
        lab
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for end in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["link", "del", end]).output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `show ports` without the counters (which the kernel may move at any time).
fn without_stats(mut v: Value) -> Value {
    for p in v.as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("stats");
    }
    v
}

struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start(config: &Path, socket: &Path) -> Running {
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(config)
        .arg("--socket")
        .arg(socket)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut r = Running(Some(child));
    let deadline = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(socket).is_err() {
        if let Some(st) = r.0.as_mut().unwrap().try_wait().unwrap() {
            let out = r.0.take().unwrap().wait_with_output().unwrap();
            panic!(
                "vecswitch run exited with {st}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "control socket did not appear");
        std::thread::sleep(Duration::from_millis(50));
    }
    r
}

fn ctl(socket: &Path, words: &str) -> Output {
    Command::new(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words.split_whitespace())
        .output()
        .unwrap()
}

fn json(socket: &Path, words: &str) -> Value {
    let out = ctl(socket, &format!("--json {words}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout).unwrap()["data"].clone()
}

fn config(lab: &Lab, extra_a: &str) -> String {
    format!(
        "[[port]]\nname = \"eth0\"\ntype = \"af_packet\"\ninterface = \"{}\"\n{extra_a}\n\
         [[port]]\nname = \"eth1\"\ntype = \"af_packet\"\ninterface = \"{}\"\n\
         [[bridge]]\nname = \"bd1\"\nports = [\"eth0\", \"eth1\"]\n",
        lab.a, lab.b
    )
}

#[test]
fn af_packet_ports_are_built_and_recreated_on_reload() {
    let lab = Lab::new("r");
    let cfg = lab.dir.join("s.toml");
    let sock = lab.dir.join("ctl.sock");
    std::fs::write(&cfg, config(&lab, "")).unwrap();
    let _sw = start(&cfg, &sock);
    let ports = json(&sock, "show ports");
    assert_eq!(ports[0]["name"], "eth0");
    assert!(
        ports[0]["describe"].as_str().unwrap().contains(&lab.a),
        "{}",
        ports[0]
    );
    assert_eq!(ports[1]["service"]["bridge"], "bd1");

    // A backend key changes: eth0 is re-created and re-attached, eth1 is left alone.
    std::fs::write(&cfg, config(&lab, "block_count = 4\nqdisc_bypass = true")).unwrap();
    let out = ctl(&sock, "reload");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [
            "remove port eth0 from bridge bd1",
            "delete port eth0",
            "add af_packet port eth0",
            "add port eth0 to bridge bd1"
        ],
        "{text}"
    );
    assert_eq!(
        json(&sock, "show bridge bd1")[0]["members"],
        serde_json::json!(["eth1", "eth0"])
    );

    // An AF_PACKET tuning value the backend refuses is a validation error with the path.
    std::fs::write(&cfg, config(&lab, "block_size = 5000")).unwrap();
    let out = ctl(&sock, "reload");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("port[0].block_size = 5000"));
}

#[test]
fn missing_interface_fails_the_start_and_a_reload_without_change() {
    let lab = Lab::new("m");
    let cfg = lab.dir.join("s.toml");
    let sock = lab.dir.join("ctl.sock");
    std::fs::write(&cfg, config(&lab, "").replace(&lab.b, "vscnosuch0")).unwrap();
    let out = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&cfg)
        .arg("--socket")
        .arg(&sock)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("vscnosuch0"), "{e}");
    assert!(!sock.exists(), "socket left behind");

    std::fs::write(&cfg, config(&lab, "")).unwrap();
    let _sw = start(&cfg, &sock);
    let before = without_stats(json(&sock, "show ports"));
    let bad = lab.dir.join("bad.toml");
    std::fs::write(
        &bad,
        config(&lab, "")
            + "[[port]]\nname = \"eth9\"\ntype = \"af_packet\"\ninterface = \"vscnosuch9\"\n",
    )
    .unwrap();
    let out = ctl(&sock, &format!("reload {}", bad.display()));
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("vscnosuch9") && e.contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(without_stats(json(&sock, "show ports")), before);
}
