//! `vecswitch run` with AF_PACKET ports on veth pairs the test creates (needs root, as CI runs);
//! the guard deletes them whatever happens. No traffic is sent: these tests are about building
//! ports from config, re-creating them on reload, and refusing a missing interface.

use std::process::Command;

use serde_json::Value;
use vecswitch_testsupport::{unique_name, RunningSwitch, TempDir, Veth};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

/// Two veth pairs (`a`–`ap`, `b`–`bp`; the switch opens `a` and `b`, so bridging them makes no
/// loop) with IPv6 off so the kernel stays quiet, and a temporary directory; the guards
/// (crates/testsupport) remove them on drop.
struct Lab {
    _veths: [Veth; 2],
    a: String,
    b: String,
    dir: TempDir,
}

impl Lab {
    fn new(tag: &str) -> Lab {
        let (a, b) = (
            unique_name(&format!("vsc{tag}a")),
            unique_name(&format!("vsc{tag}b")),
        );
        let _veths = [&a, &b].map(|end| Veth::new(end, &format!("{end}p")));
        Lab {
            _veths,
            a,
            b,
            dir: TempDir::new(&format!("ctl-afp-{tag}")),
        }
    }
}

/// `show ports` without the counters (which the kernel may move at any time).
fn without_stats(mut v: Value) -> Value {
    for p in v.as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("stats");
    }
    v
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
    let cfg = lab.dir.path("s.toml");
    let sock = lab.dir.path("ctl.sock");
    std::fs::write(&cfg, config(&lab, "")).unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &sock);
    let ports = sw.json("show ports");
    assert_eq!(ports[0]["name"], "eth0");
    assert!(
        ports[0]["describe"].as_str().unwrap().contains(&lab.a),
        "{}",
        ports[0]
    );
    assert_eq!(ports[1]["service"]["bridge"], "bd1");

    // A backend key changes: eth0 is re-created and re-attached, eth1 is left alone.
    std::fs::write(&cfg, config(&lab, "block_count = 4\nqdisc_bypass = true")).unwrap();
    let out = sw.ctl("reload");
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
        sw.json("show bridge bd1")[0]["members"],
        serde_json::json!(["eth1", "eth0"])
    );

    // An AF_PACKET tuning value the backend refuses is a validation error with the path.
    std::fs::write(&cfg, config(&lab, "block_size = 5000")).unwrap();
    let out = sw.ctl("reload");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("port[0].block_size = 5000"));
}

#[test]
fn missing_interface_fails_the_start_and_a_reload_without_change() {
    let lab = Lab::new("m");
    let cfg = lab.dir.path("s.toml");
    let sock = lab.dir.path("ctl.sock");
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
    let sw = RunningSwitch::start(BIN, &cfg, &sock);
    let before = without_stats(sw.json("show ports"));
    let bad = lab.dir.path("bad.toml");
    std::fs::write(
        &bad,
        config(&lab, "")
            + "[[port]]\nname = \"eth9\"\ntype = \"af_packet\"\ninterface = \"vscnosuch9\"\n",
    )
    .unwrap();
    let out = sw.ctl(&format!("reload {}", bad.display()));
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("vscnosuch9") && e.contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(without_stats(sw.json("show ports")), before);
}
