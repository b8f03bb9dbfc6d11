//! The Ctrl-C / SIGTERM path: the first signal sets the stop flag (the process keeps running so the
//! guards can unwind), waits and trials then stop. Own test binary: the flag is process-wide.

use std::time::Duration;

use vecswitch_lab::{Load, Measurer};
use vecswitch_ports::loopback;
use vecswitch_ports::Port;
use vecswitch_testbed::{default_streams, signal, wait_for, Error, GenMeasurer};

#[test]
fn first_sigterm_sets_the_stop_flag_and_stops_waits_and_trials() {
    signal::install_stop_handler().unwrap();
    assert!(!signal::stop_requested());

    // Before the signal a trial runs (loopback: port 0 and 1 are wired to each other).
    let (a, b) = loopback::pair("l0", "l1");
    let ports: Vec<Box<dyn Port>> = vec![Box::new(a), Box::new(b)];
    let mut m = GenMeasurer::new(ports, default_streams(64, false)).unwrap();
    let r = m
        .trial(Load::fps(1_000.0), Duration::from_millis(50))
        .unwrap();
    assert!(r.offered_frames > 0);
    assert_eq!(r.received_frames, r.offered_frames);

    nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM).unwrap();
    wait_for(
        "the signal thread to set the flag",
        Duration::from_secs(5),
        signal::stop_requested,
    )
    .unwrap_err_or_stopped();
    assert!(signal::stop_requested());

    // A long wait gives up at once, saying why.
    let e = wait_for("forever", Duration::from_secs(3600), || false).unwrap_err();
    assert!(matches!(e, Error::Stopped), "{e}");
    // And the measurer refuses the next trial instead of running it.
    let e = m
        .trial(Load::fps(1_000.0), Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(e.contains("stop requested"), "{e}");
    assert_eq!(m.reports().len(), 1);
    signal::clear_stop();
}

trait StoppedIsFine {
    fn unwrap_err_or_stopped(self);
}

impl StoppedIsFine for vecswitch_testbed::Result<()> {
    /// `wait_for` returns Ok when the condition holds, or `Stopped` when the flag it polls for is
    /// the stop flag itself; both mean the flag is set.
    fn unwrap_err_or_stopped(self) {
        match self {
            Ok(()) | Err(Error::Stopped) => {}
            Err(e) => panic!("{e}"),
        }
    }
}
