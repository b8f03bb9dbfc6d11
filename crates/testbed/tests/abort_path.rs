//! A second SIGINT/SIGTERM tears down every registered namespace and child process group and exits
//! with 130, even when the program is stuck and never unwinds.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

fn example(name: &str) -> std::path::PathBuf {
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

#[test]
fn second_signal_tears_everything_down_and_exits_130() {
    let bin = example("hold_netns");
    assert!(bin.is_file(), "example not built: {} (a plain `cargo test -p vecswitch-testbed` builds it; a `--test` filter does not)", bin.display());
    let mut child = Command::new(&bin).stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut it = line.split_whitespace();
    let ns = it.next().unwrap().to_string();
    let sleeper: i32 = it.next().unwrap().parse().unwrap();
    let list = || vecswitch_testbed::cmd::run("ip", &["netns", "list"]).unwrap();
    assert!(list().contains(&ns));

    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // First signal: only the flag; the program (stuck on purpose) still runs.
    assert!(child.try_wait().unwrap().is_none());
    kill(pid, Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!list().contains(&ns), "namespace {ns} left behind");
    vecswitch_testbed::wait_for("the sleeper to be gone", Duration::from_secs(5), || {
        !std::path::Path::new(&format!("/proc/{sleeper}")).exists()
            || std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                .is_ok_and(|s| s.contains(") Z "))
    })
    .unwrap();
    // The run directory of the dead process is a stale leftover now.
    let report = vecswitch_testbed::cleanup_stale(vecswitch_testbed::DEFAULT_PREFIX);
    assert!(
        report
            .run_dirs
            .iter()
            .any(|d| d.to_string_lossy().contains(&format!("vtb{}-", child.id()))),
        "{report:?}"
    );
}
