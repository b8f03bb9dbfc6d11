//! How the controller reaches the switch: a [`Worker`] queues a [`Job`] on it, and a request
//! waits for the answer at most a [`WorkerDeadline`] (see the deadline part of the
//! [controller's doc](super)): [`queue`] queues a closure, [`Queued::wait`] waits for its answer.

use super::ControlError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use vecswitch_switch::{Switch, WorkerGone};

/// A closure to run on the switch.
pub type Job = Box<dyn FnOnce(&mut Switch) + Send>;

/// Where the switch runs: [`Worker::run`] queues a job on it and returns without waiting for it
/// (for a spawned switch, the worker thread runs it between two poll iterations:
/// `SwitchHandle::post`); a switch in the caller's thread may run it before returning.
pub trait Worker: Send + Sync {
    fn run(&self, job: Job) -> Result<(), WorkerGone>;
    /// Whether the switch still runs (a worker thread that panicked does not).
    fn is_alive(&self) -> bool {
        true
    }
}

impl Worker for vecswitch_switch::SwitchHandle {
    fn run(&self, job: Job) -> Result<(), WorkerGone> {
        self.post(job)
    }
    fn is_alive(&self) -> bool {
        self.is_running()
    }
}

/// A switch driven in the caller's thread (tests; a switch that is not spawned): a job runs
/// before [`Worker::run`] returns.
#[derive(Debug)]
pub struct Local(pub Mutex<Switch>);

impl Worker for Local {
    fn run(&self, job: Job) -> Result<(), WorkerGone> {
        let mut d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        job(&mut d);
        Ok(())
    }
}

/// How long a request waits for the worker (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerDeadline {
    /// A job the worker has not started this long after it was queued is given up on: the worker
    /// runs one between two poll iterations (microseconds apart) unless it is stuck.
    pub start: Duration,
    /// A job the worker has started is waited for until this long after it was queued.
    pub answer: Duration,
}

/// The deadline of socket requests. With the server's 5 s wait for the controller
/// (`server::REQUEST_DEADLINE`) a request is answered within 25 s, inside `vecswitch ctl`'s
/// default 30 s.
pub const WORKER_DEADLINE: WorkerDeadline = WorkerDeadline {
    start: Duration::from_secs(5),
    answer: Duration::from_secs(20),
};

/// A job queued on the worker, and the way to its answer.
pub(super) struct Queued<R> {
    pub(super) answer: mpsc::Receiver<R>,
    started: Arc<AtomicBool>,
    pub(super) done: Arc<AtomicBool>,
    pub(super) at: Instant,
}

/// Queues `f` on the worker.
pub(super) fn queue<R, F>(w: &dyn Worker, f: F) -> Result<Queued<R>, ControlError>
where
    R: Send + 'static,
    F: FnOnce(&mut Switch) -> R + Send + 'static,
{
    let (tx, answer) = mpsc::sync_channel(1);
    let started = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let (s, d) = (Arc::clone(&started), Arc::clone(&done));
    let at = Instant::now();
    w.run(Box::new(move |sw| {
        s.store(true, Ordering::Release);
        let r = f(sw);
        d.store(true, Ordering::Release);
        // The caller may have stopped waiting; the answer then waits in the channel.
        let _ = tx.send(r);
    }))?;
    Ok(Queued {
        answer,
        started,
        done,
        at,
    })
}

impl<R> Queued<R> {
    /// Waits for the answer until `deadline` (`None`: as long as it takes). `Ok(Err(self))`: not
    /// answered in time (the job stays queued or running).
    pub(super) fn wait(
        self,
        deadline: Option<WorkerDeadline>,
    ) -> Result<Result<R, Queued<R>>, ControlError> {
        use mpsc::RecvTimeoutError::{Disconnected, Timeout};
        let Some(d) = deadline else {
            return self
                .answer
                .recv()
                .map(Ok)
                .map_err(|_| ControlError::NoAnswer);
        };
        for limit in [d.start, d.answer.max(d.start)] {
            match self
                .answer
                .recv_timeout(limit.saturating_sub(self.at.elapsed()))
            {
                Ok(r) => return Ok(Ok(r)),
                // The job was dropped without an answer: the worker is gone (or the job panicked).
                Err(Disconnected) => return Err(ControlError::NoAnswer),
                Err(Timeout) if !self.started.load(Ordering::Acquire) => break,
                Err(Timeout) => {}
            }
        }
        Ok(Err(self))
    }

    /// Why it was not answered in time, for messages.
    pub(super) fn why_late(&self) -> &'static str {
        if self.started.load(Ordering::Acquire) {
            "its worker started the request and has not finished it"
        } else {
            "its worker has not started the request (it is stuck, e.g. in a port's system call)"
        }
    }
}

#[cfg(test)]
pub(crate) mod stuck {
    //! A worker that can be stuck: while held, jobs queue and nothing runs (a worker blocked in a
    //! port's system call); released, the queued jobs run in order on a switch in the test's
    //! thread.
    use super::{Job, Local, Worker};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use vecswitch_switch::WorkerGone;

    /// The worker (give it to the controller) and its handle (keep it) share the switch.
    #[derive(Clone)]
    pub struct Stuck {
        pub local: Arc<Local>,
        inner: Arc<(AtomicBool, Mutex<Vec<Job>>)>,
    }

    impl Stuck {
        pub fn new(local: Local) -> Stuck {
            Stuck {
                local: Arc::new(local),
                inner: Arc::default(),
            }
        }
        /// From now on jobs queue instead of running.
        pub fn hold(&self) {
            self.inner.0.store(true, Ordering::SeqCst);
        }
        /// Jobs waiting.
        pub fn queued(&self) -> usize {
            self.inner.1.lock().unwrap().len()
        }
        /// Runs the queued jobs (in order) and lets later ones run at once; returns how many ran.
        pub fn release(&self) -> usize {
            let jobs: Vec<Job> = {
                let mut q = self.inner.1.lock().unwrap();
                self.inner.0.store(false, Ordering::SeqCst);
                q.drain(..).collect()
            };
            let n = jobs.len();
            for j in jobs {
                self.local.run(j).unwrap();
            }
            n
        }
    }

    impl Worker for Stuck {
        fn run(&self, job: Job) -> Result<(), WorkerGone> {
            let mut q = self.inner.1.lock().unwrap();
            if self.inner.0.load(Ordering::SeqCst) {
                q.push(job);
                return Ok(());
            }
            drop(q);
            self.local.run(job)
        }
    }
}
