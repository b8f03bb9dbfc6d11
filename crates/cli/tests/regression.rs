//! Regression tests, each named after the bug it keeps fixed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

/// `vecswitch report html FILE | head -1` (any command whose reader leaves early) panicked with
/// "failed printing to stdout: Broken pipe"; it must end quietly with success.
#[test]
fn closed_stdout_pipe_is_not_a_panic() {
    let dir = std::env::temp_dir().join(format!("vecswitch-epipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("sim.json");
    let st = Command::new(BIN)
        .args(["bench", "--simulate", "-o"])
        .arg(&json)
        .status()
        .unwrap();
    assert!(st.success());

    let mut child = Command::new(BIN)
        .args(["report", "html"])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is gone: the rest of the report (over 200 kB, more than a pipe buffers) meets a
    // closed pipe.
    let out = child.wait_with_output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(first.starts_with("<!"), "{first}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        out.status.success(),
        "exit {:?}, stderr: {stderr}",
        out.status
    );
}
