//! Creates a namespace with a process inside it, prints the namespace's name and waits for a stop
//! request; the `abort_path` test sends it two SIGTERMs to exercise the second-signal teardown.
#![forbid(unsafe_code)]

use std::time::Duration;

use vecswitch_testbed::{signal, ChildGuard, Netns, ProcessSpec, RunDir};

fn main() {
    signal::install_stop_handler().expect("signal handler");
    let run = RunDir::create().expect("run dir");
    let ns = Netns::create(&format!("{}-hold", run.id())).expect("netns");
    let spec = ProcessSpec::new("sleeper", "sleep")
        .arg("600")
        .netns(Some(ns.name()));
    let child = ChildGuard::spawn(&spec, run.path()).expect("spawn");
    println!("{} {}", ns.name(), child.pid());
    // Wait as a bench loop would; the first signal only sets the flag, and here we ignore it on
    // purpose (a stuck step) so that the second signal's teardown is what cleans up.
    loop {
        std::thread::sleep(Duration::from_millis(20));
    }
}
