//! The worker thread: [`spawn`] moves a [`Switch`] onto its own thread, which runs
//! [`Switch::poll_once`] in a loop, and returns a [`SwitchHandle`] through which the control side
//! runs closures on the switch between iterations ([`SwitchHandle::call`]) and stops it.
//!
//! No lock is taken per packet: the worker owns the switch; control calls arrive on a channel that
//! the loop checks with one `try_recv` per iteration.
//!
//! Idle behaviour: after [`IDLE_POLLS_BEFORE_SLEEP`] consecutive iterations that received nothing,
//! the worker waits for a control call for up to a back-off time that doubles from
//! [`IDLE_SLEEP_MIN`] to [`IDLE_SLEEP_MAX`] (10 µs → 100 µs) while it stays idle, then polls again.
//! An idle switch so uses a small fraction of a core, answers control calls at once, and picks up
//! traffic within at most 100 µs (a 10 Gb/s port receives about 1,500 minimum-size frames in that
//! time, which port rings absorb). The first received packet resets the back-off.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::runtime::Switch;

/// Empty polls in a row before the worker starts sleeping.
pub const IDLE_POLLS_BEFORE_SLEEP: u32 = 256;
/// First idle wait.
pub const IDLE_SLEEP_MIN: Duration = Duration::from_micros(10);
/// Longest idle wait.
pub const IDLE_SLEEP_MAX: Duration = Duration::from_micros(100);

type Call = Box<dyn FnOnce(&mut Switch) + Send>;

enum Msg {
    Call(Call),
    Stop,
}

/// The worker thread is gone (it was stopped, or a call panicked on it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the switch worker thread is not running")]
pub struct WorkerGone;

/// Control side of a running switch. Dropping it stops the worker.
#[derive(Debug)]
pub struct SwitchHandle {
    tx: Sender<Msg>,
    thread: Option<JoinHandle<Switch>>,
}

/// Starts `switch` on a new thread named `vecswitch-worker`.
pub fn spawn(switch: Switch) -> std::io::Result<SwitchHandle> {
    let (tx, rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("vecswitch-worker".into())
        .spawn(move || run(switch, rx))?;
    Ok(SwitchHandle {
        tx,
        thread: Some(thread),
    })
}

/// What one message asks of the loop: go on or stop.
fn handle(sw: &mut Switch, msg: Msg) -> bool {
    match msg {
        Msg::Call(f) => {
            f(sw);
            true
        }
        Msg::Stop => false,
    }
}

fn run(mut sw: Switch, rx: Receiver<Msg>) -> Switch {
    let mut empty_polls = 0u32;
    let mut sleep = IDLE_SLEEP_MIN;
    loop {
        loop {
            match rx.try_recv() {
                Ok(m) => {
                    if !handle(&mut sw, m) {
                        return sw;
                    }
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return sw,
            }
        }
        let received = sw.poll_once();
        sw.run_timers(); // the features' timers (e.g. LACP), see `Feature::timers`
        if received > 0 {
            empty_polls = 0;
            sleep = IDLE_SLEEP_MIN;
            continue;
        }
        empty_polls = empty_polls.saturating_add(1);
        if empty_polls < IDLE_POLLS_BEFORE_SLEEP {
            continue;
        }
        sw.note_idle_sleep();
        match rx.recv_timeout(sleep) {
            Ok(m) => {
                if !handle(&mut sw, m) {
                    return sw;
                }
            }
            Err(RecvTimeoutError::Timeout) => sleep = (sleep * 2).min(IDLE_SLEEP_MAX),
            Err(RecvTimeoutError::Disconnected) => return sw,
        }
    }
}

impl SwitchHandle {
    /// Runs `f` on the switch between two poll iterations and returns its result. `f` runs on the
    /// worker thread (so a call can also set that thread's CPU affinity).
    pub fn call<R, F>(&self, f: F) -> Result<R, WorkerGone>
    where
        R: Send + 'static,
        F: FnOnce(&mut Switch) -> R + Send + 'static,
    {
        let (rtx, rrx) = mpsc::sync_channel(1);
        let call: Call = Box::new(move |sw| {
            // The caller may have given up waiting; then nobody wants the result.
            let _ = rtx.send(f(sw));
        });
        self.tx.send(Msg::Call(call)).map_err(|_| WorkerGone)?;
        rrx.recv().map_err(|_| WorkerGone)
    }

    /// Stops the worker and gives the switch back.
    pub fn stop(mut self) -> Result<Switch, WorkerGone> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<Switch, WorkerGone> {
        let t = self.thread.take().ok_or(WorkerGone)?;
        let _ = self.tx.send(Msg::Stop);
        t.join().map_err(|_| WorkerGone)
    }

    /// Whether the worker thread is still running.
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for SwitchHandle {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}
