//! Control-socket security (issue 14 item 1), end to end: a real `vecswitch run` (memif server
//! ports, no peer needed) and `vecswitch ctl` run as another uid with `setpriv`. The socket file is
//! made world-writable here on purpose so that the peer-credential check, not the file mode, is
//! what refuses. Needs root (to change uid) and util-linux `setpriv` (scripts/setup.sh installs
//! util-linux); without either the test fails saying so.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use vecswitch_testsupport::{RunningSwitch, TempDir};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
const NOBODY: &str = "65534";

/// A temporary directory others may traverse (0755: the uid-65534 `ctl` must reach the socket,
/// so that the peer-credential check, not the directory, refuses it).
fn temp_dir(tag: &str) -> TempDir {
    let d = TempDir::new(tag);
    std::fs::set_permissions(d.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// A running `vecswitch run` with one memif server port and `capture_dir` = `d/cap`.
fn start_switch(d: &TempDir) -> RunningSwitch {
    let config = d.path("sw.toml");
    std::fs::write(
        &config,
        format!(
            "[switch]\nbuffers = 2048\nmac_table_entries = 1024\ncapture_dir = \"{}\"\n[[port]]\nname = \"p0\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 0\n",
            d.path("cap").display(),
            d.path("memif.sock").display()
        ),
    )
    .unwrap();
    RunningSwitch::start(BIN, &config, &d.path("ctl.sock"))
}

/// `vecswitch ctl --socket S show ports` run through `setpriv` with `args`.
fn ctl_as(socket: &Path, args: &[&str]) -> Output {
    let out = Command::new("setpriv")
        .args(args)
        .arg(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(["show", "ports"])
        .output()
        .expect("run setpriv (util-linux; scripts/setup.sh installs it)");
    out
}

fn need_root() {
    let uid = std::fs::metadata("/proc/self").unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        uid.uid(),
        0,
        "this test changes uid with setpriv and must run as root (CI runs tests as root)"
    );
}

#[test]
fn other_uid_is_refused_by_peer_credentials_group_member_and_root_admitted() {
    need_root();
    let d = temp_dir("cred");
    let sw = start_switch(&d);
    // World-connectable on purpose: only the SO_PEERCRED check stands in the way now.
    std::fs::set_permissions(sw.socket(), std::fs::Permissions::from_mode(0o666)).unwrap();

    let out = ctl_as(
        sw.socket(),
        &["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "uid {NOBODY} was served: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("permission denied") && err.contains(&format!("uid {NOBODY}")),
        "{err}"
    );
    assert!(err.contains("accepted are uid 0"), "{err}");

    // A member of the socket's group (supplementary) is admitted.
    let gid = 4242 + std::process::id() % 1000;
    std::os::unix::fs::chown(sw.socket(), None, Some(gid)).unwrap();
    let g = gid.to_string();
    let out = ctl_as(
        sw.socket(),
        &["--reuid", NOBODY, "--regid", NOBODY, "--groups", &g],
    );
    assert!(
        out.status.success(),
        "member of gid {gid} refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("p0"));

    // Root is admitted.
    let out = ctl_as(sw.socket(), &["--reuid", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The refusal was logged with the uid and pid.
    let log = sw.stderr();
    drop(sw);
    assert!(
        log.contains("refused connection")
            && log.contains(&format!("uid {NOBODY}"))
            && log.contains("pid "),
        "{log}"
    );
}

fn ctl(socket: &Path, words: &[&str]) -> Output {
    Command::new(BIN)
        .arg("ctl")
        .arg("--socket")
        .arg(socket)
        .args(words)
        .output()
        .expect("run vecswitch ctl")
}

#[test]
fn capture_only_into_new_files_in_the_capture_dir_symlink_and_fifo_refused() {
    let d = temp_dir("cap");
    let sw = start_switch(&d);
    let cap = d.path("cap");
    std::fs::create_dir_all(&cap).unwrap();
    let victim = d.path("victim");
    std::fs::write(&victim, b"keep").unwrap();
    std::os::unix::fs::symlink(&victim, cap.join("link.pcap")).unwrap();
    let fifo = cap.join("fifo.pcap");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils)")
        .success());
    for (file, why) in [
        ("link.pcap", "already exists"),
        ("fifo.pcap", "already exists"),
        ("../victim", "`..`"),
        (victim.to_str().unwrap(), "outside the capture directory"),
    ] {
        let out = ctl(sw.socket(), &["capture", "p0", file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why) && err.contains("capture_dir"),
            "{file}: {err}"
        );
        // The switch keeps answering (nothing blocked on the FIFO).
        let out = ctl(sw.socket(), &["show", "ports"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    // A new relative name is created inside the directory.
    let out = ctl(sw.socket(), &["capture", "p0", "ok.pcap", "5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ctl(sw.socket(), &["capture", "stop", "p0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::metadata(cap.join("ok.pcap")).unwrap().is_file());
}

/// `ctl save` writes only the started-with file or a file in its directory (issue 14 item 4):
/// outside it, through a symlink, or onto a FIFO it is refused naming `path`, and the switch keeps
/// answering; next to the config file it writes.
#[test]
fn save_only_next_to_the_started_file_no_link_followed() {
    let d = temp_dir("save");
    let sw = start_switch(&d);
    let victim = d.path("cap-victim");
    std::fs::write(&victim, b"keep").unwrap();
    let outside = temp_dir("save-out");
    std::os::unix::fs::symlink(&victim, d.path("link.toml")).unwrap();
    assert!(Command::new("mkfifo")
        .arg(d.path("fifo.toml"))
        .status()
        .expect("mkfifo (coreutils)")
        .success());
    let far = outside.path("x.toml");
    for (file, why) in [
        (far.to_str().unwrap(), "not in the directory"),
        (d.path("link.toml").to_str().unwrap(), "a symbolic link"),
        (d.path("fifo.toml").to_str().unwrap(), "not a regular file"),
    ] {
        let err = sw.fails(&format!("save {file}"));
        assert!(
            err.contains(&format!("path = {file:?}")) && err.contains(why),
            "{file}: {err}"
        );
        assert!(
            sw.ok("show ports").contains("p0"),
            "the switch still answers"
        );
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    assert!(!far.exists());
    let out = sw.ok(&format!("save {}", d.path("copy.toml").display()));
    assert!(out.contains("copy.toml"), "{out}");
    let text = std::fs::read_to_string(d.path("copy.toml")).unwrap();
    assert!(text.contains("name = \"p0\""), "{text}");
}
