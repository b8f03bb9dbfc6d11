//! Control-socket security (issue 14 item 1), end to end: a real `vecswitch run` (memif server
//! ports, no peer needed) and `vecswitch ctl` run as another uid with `setpriv`. The socket file is
//! made world-writable here on purpose so that the peer-credential check, not the file mode, is
//! what refuses. Needs root (to change uid) and util-linux `setpriv` (scripts/setup.sh installs
//! util-linux); without either the test fails saying so.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");
const NOBODY: &str = "65534";

struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("vsw-sec-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        TempDir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `vecswitch run`, killed on drop.
struct Switch {
    child: Option<Child>,
    socket: PathBuf,
}
impl Switch {
    fn start(d: &TempDir) -> Switch {
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
        let socket = d.path("ctl.sock");
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(&config)
            .arg("--socket")
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn vecswitch run");
        let mut sw = Switch {
            child: Some(child),
            socket,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while UnixStream::connect(&sw.socket).is_err() {
            if let Some(st) = sw.child.as_mut().unwrap().try_wait().unwrap() {
                let out = sw.child.take().unwrap().wait_with_output().unwrap();
                panic!(
                    "vecswitch run exited with {st}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(Instant::now() < deadline, "control socket did not appear");
            std::thread::sleep(Duration::from_millis(50));
        }
        sw
    }

    /// Kills the switch; returns its stderr.
    fn stderr(mut self) -> String {
        let mut c = self.child.take().unwrap();
        let _ = c.kill();
        String::from_utf8_lossy(&c.wait_with_output().unwrap().stderr).into_owned()
    }
}
impl Drop for Switch {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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
    let d = TempDir::new("cred");
    let sw = Switch::start(&d);
    // World-connectable on purpose: only the SO_PEERCRED check stands in the way now.
    std::fs::set_permissions(&sw.socket, std::fs::Permissions::from_mode(0o666)).unwrap();

    let out = ctl_as(
        &sw.socket,
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
    std::os::unix::fs::chown(&sw.socket, None, Some(gid)).unwrap();
    let g = gid.to_string();
    let out = ctl_as(
        &sw.socket,
        &["--reuid", NOBODY, "--regid", NOBODY, "--groups", &g],
    );
    assert!(
        out.status.success(),
        "member of gid {gid} refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("p0"));

    // Root is admitted.
    let out = ctl_as(&sw.socket, &["--reuid", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The refusal was logged with the uid and pid.
    let log = sw.stderr();
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
    let d = TempDir::new("cap");
    let sw = Switch::start(&d);
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
        let out = ctl(&sw.socket, &["capture", "p0", file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(why) && err.contains("capture_dir"),
            "{file}: {err}"
        );
        // The switch keeps answering (nothing blocked on the FIFO).
        let out = ctl(&sw.socket, &["show", "ports"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    // A new relative name is created inside the directory.
    let out = ctl(&sw.socket, &["capture", "p0", "ok.pcap", "5"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ctl(&sw.socket, &["capture", "stop", "p0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::metadata(cap.join("ok.pcap")).unwrap().is_file());
}
