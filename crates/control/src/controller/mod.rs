//! [`Controller`]: the control plane's state — the running [`Config`] and the way to reach the
//! switch (a [`Worker`]) — and the one path every change takes: [`Controller::set_config`]
//! validates the new config whole, refuses `[switch]` changes, diffs it against the running one,
//! opens new ports before touching the switch, applies the changes on the worker (all or nothing,
//! see [`crate::apply`]) and only then makes it the running config.
//!
//! Socket requests ([`Controller::handle`]) that change something are the `ctl` verbs the sections
//! register (`port add`, `bridge member add`, `mac add`, `bond add`, ...: [`crate::sections`]),
//! edits of a copy of the running config sent down the same path, so they are
//! checked by the same rules as a config file and `show config` always describes the switch. A
//! `reload` makes the file the truth again: what was added at run time and is not in the file goes.
//!
//! **Deadlines** (issue 14 item 1). A request reaches the switch as a job queued to its worker
//! ([`Worker::run`] returns at once), and waits for the answer at most [`WORKER_DEADLINE`]: a worker
//! that has not *started* the job within `start` is stuck (a port blocking in a system call), and
//! one that started it is given until `answer` (a million-route apply takes seconds). A request
//! past its deadline is answered "the switch did not answer" — but its job stays queued and will
//! run, as a VPP binary-API message still runs after its client's read timed out and an
//! `ovs-vsctl --timeout` transaction stays committed for `ovs-vswitchd` to apply (ovs-vsctl(8):
//! it waits for `cur_cfg` to reach `next_cfg`). So the answer says the change *is queued*, not
//! that it failed, and the controller remembers it ([`Overdue`]): until the worker has run it, every
//! request that needs the worker or the running config is refused with `switch busy` (so nothing
//! queues behind a stuck worker and no diff is made against a config that is about to change),
//! while `show config` and `show version` still answer; `show version` names the queued request.
//! When the worker runs it, the next request settles it: an applied change becomes the running
//! config and is counted in `changes_applied` exactly once, and one the worker refused (undone, as
//! every failed apply) is reported by `show version` (`queued_failed`) and leaves the running config
//! as it was — the controller never believes the opposite of what the worker did.

mod error;
mod files;
mod worker;

pub use error::ControlError;
pub(crate) use files::create_capture_file;
#[cfg(test)]
pub(crate) use worker::stuck;
pub use worker::{Job, Local, Worker, WorkerDeadline, WORKER_DEADLINE};

use crate::apply::{apply_changes, ApplyError, PortFactory};
use crate::config::Config;
use crate::diff::{check_reloadable, diff, Change};
use crate::ports::port_of;
use crate::protocol::{Changes, Request, Response, VersionInfo};
use crate::sections::FoundShow;
use crate::validate::validate;
use files::read_config;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Instant;
use vecswitch_ports::Port;
use vecswitch_switch::capture::PortCapture;
use vecswitch_switch::{Switch, SwitchError};
use worker::{queue, Queued};

/// A request the worker did not answer by its deadline: still queued (or running) there.
struct Overdue {
    /// The request, for messages (`show mac`, `3 changes: add bridge br9, ...`).
    what: String,
    at: Instant,
    kind: OverdueKind,
}

enum OverdueKind {
    /// A request whose answer nobody waits for any more: only whether it has run matters.
    Other { done: Arc<AtomicBool> },
    /// A config change: `new` becomes the running config (and `count` changes are counted) if
    /// the worker applies it; `path` becomes the file the switch runs from (a reload).
    Change {
        queued: Queued<Result<(), ApplyError>>,
        new: Box<Config>,
        count: u64,
        path: Option<PathBuf>,
    },
}

/// Describes changes for messages: the one change, or how many and the first.
fn summarize(changes: &[Change]) -> String {
    match changes {
        [one] => one.describe(),
        [first, ..] => format!("{} changes ({}, ...)", changes.len(), first.describe()),
        [] => "no change".into(),
    }
}

/// Most changes an answer lists one by one; one more line says how many others there are (a
/// million-route reload answers a page, not a million lines built on the control path).
pub const MAX_CHANGES_LISTED: usize = 1000;

/// Changes above which an apply is followed by giving the freed heap back to the kernel: the
/// parse, diff and apply of a large table leave their peak resident otherwise (2.2 KB per route
/// after a 20,000-route reload, 0.8 KB after the trim; `vecswitch_ports::heap`).
const TRIM_AFTER_CHANGES: usize = 1000;

/// How long `capture stop` waits for the capture's writer thread to complete the file.
const CAPTURE_FINISH_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// A typed answer as JSON.
pub(crate) fn json<T: serde::Serialize>(v: T) -> Result<serde_json::Value, ControlError> {
    serde_json::to_value(v).map_err(ControlError::Encode)
}

/// Joins names for messages (`a, b`), or `(none)`.
fn list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let v: Vec<&str> = names.collect();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

/// The control plane's state. See the module doc.
pub struct Controller {
    worker: Box<dyn Worker>,
    factory: Arc<PortFactory>,
    running: Config,
    config_path: Option<PathBuf>,
    /// The directory of the file the switch was started with (canonical): `reload PATH` reads
    /// only files in it.
    reload_dir: Option<PathBuf>,
    started: std::time::Instant,
    /// Changes applied since start (the initial build included), for `show version`.
    applied: u64,
    /// How long a request waits for the worker (`None`: as long as it takes; while starting).
    deadline: Option<WorkerDeadline>,
    /// The request the worker did not answer by its deadline, until it has run.
    overdue: Option<Overdue>,
    /// The last queued change the worker refused after its request had timed out.
    queued_failed: Option<String>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("running", &self.running)
            .field("config_path", &self.config_path)
            .finish()
    }
}

impl Controller {
    /// Builds `config` onto an empty switch (validating it first).
    pub fn start(
        worker: Box<dyn Worker>,
        factory: Arc<PortFactory>,
        config: Config,
        config_path: Option<PathBuf>,
    ) -> Result<Controller, ControlError> {
        let empty = Config {
            switch: config.switch.clone(),
            ..Config::default()
        };
        let reload_dir = config_path
            .as_deref()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .and_then(|p| p.parent().map(Path::to_path_buf));
        let mut c = Controller {
            worker,
            factory,
            running: empty,
            config_path,
            reload_dir,
            started: std::time::Instant::now(),
            applied: 0,
            deadline: None,
            overdue: None,
            queued_failed: None,
        };
        // The initial build waits as long as it takes (nobody else is served before it ends).
        c.set_config(config)?;
        c.deadline = Some(WORKER_DEADLINE);
        // The file's parse is over too: its peak goes back to the kernel.
        vecswitch_ports::heap::release_free_heap();
        Ok(c)
    }

    /// Sets how long requests wait for the worker (`None`: as long as it takes).
    pub fn set_worker_deadline(&mut self, deadline: Option<WorkerDeadline>) {
        self.deadline = deadline;
    }

    /// Settles the overdue request if the worker has run it (see the module doc); then refuses
    /// with [`ControlError::Behind`] if one is still queued.
    fn worker_free(&mut self) -> Result<(), ControlError> {
        self.catch_up();
        match &self.overdue {
            None => Ok(()),
            Some(o) => Err(ControlError::Behind {
                what: o.what.clone(),
                ago_s: o.at.elapsed().as_secs(),
            }),
        }
    }

    /// Takes the outcome of the overdue request if the worker has run it: an applied change
    /// becomes the running config, a refused one is remembered for `show version`.
    fn catch_up(&mut self) {
        let Some(o) = self.overdue.take() else {
            return;
        };
        match o.kind {
            OverdueKind::Other { done } if !done.load(Ordering::Acquire) && self.worker_alive() => {
                self.overdue = Some(Overdue {
                    kind: OverdueKind::Other { done },
                    ..o
                });
            }
            OverdueKind::Other { .. } => {}
            OverdueKind::Change {
                queued,
                new,
                count,
                path,
            } => match queued.answer.try_recv() {
                Ok(Ok(())) => {
                    self.running = *new;
                    self.applied += count;
                    if count as usize > TRIM_AFTER_CHANGES {
                        vecswitch_ports::heap::release_free_heap();
                    }
                    if path.is_some() {
                        self.config_path = path;
                    }
                    eprintln!(
                        "vecswitch: control: {} applied by the worker {} s after it was queued (its request had timed out)",
                        o.what,
                        o.at.elapsed().as_secs()
                    );
                }
                Ok(Err(e)) => {
                    let msg = format!(
                        "{} (queued when its request timed out) was refused by the switch: {e}",
                        o.what
                    );
                    eprintln!("vecswitch: control: {msg}");
                    self.queued_failed = Some(msg);
                }
                Err(mpsc::TryRecvError::Disconnected) => {
                    let msg = format!(
                        "{} (queued when its request timed out) was never run: the switch worker is gone",
                        o.what
                    );
                    eprintln!("vecswitch: control: {msg}");
                    self.queued_failed = Some(msg);
                }
                Err(mpsc::TryRecvError::Empty) => {
                    self.overdue = Some(Overdue {
                        kind: OverdueKind::Change {
                            queued,
                            new,
                            count,
                            path,
                        },
                        ..o
                    });
                }
            },
        }
    }

    /// Runs `f` on the worker for request `what`, waiting until the deadline; past it, the job
    /// stays queued and becomes the overdue request.
    fn on_worker<R, F>(&mut self, what: &str, f: F) -> Result<R, ControlError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Switch) -> R + Send + 'static,
    {
        self.worker_free()?;
        match queue(&*self.worker, f)?.wait(self.deadline)? {
            Ok(r) => Ok(r),
            Err(q) => {
                let err = self.late(&q, what, "will run when the worker gets to it");
                self.overdue = Some(Overdue {
                    what: what.to_string(),
                    at: q.at,
                    kind: OverdueKind::Other {
                        done: Arc::clone(&q.done),
                    },
                });
                Err(err)
            }
        }
    }

    fn late<R>(&self, q: &Queued<R>, what: &str, outcome: &'static str) -> ControlError {
        ControlError::Late {
            waited_s: q.at.elapsed().as_secs_f64(),
            why: q.why_late(),
            what: what.to_string(),
            outcome,
        }
    }

    /// Whether the switch's worker still runs.
    pub fn worker_alive(&self) -> bool {
        self.worker.is_alive()
    }

    /// The running config.
    pub fn running(&self) -> &Config {
        &self.running
    }

    /// Makes `new` the running config (see the module doc). Returns the changes made.
    pub fn set_config(&mut self, new: Config) -> Result<Vec<Change>, ControlError> {
        self.worker_free()?;
        validate(&new)?;
        check_reloadable(&self.running, &new)?;
        let changes = diff(&self.running, &new);
        if changes.is_empty() {
            self.running = new;
            return Ok(changes);
        }
        // Open ports with new names before the switch is touched: the usual failure (no such
        // interface, socket path in use) then changes nothing. Re-created ports are opened in turn,
        // after their old selves are closed (they may need the same socket or interface). So is a
        // new port that cannot be opened while a port this change deletes still holds its
        // resource (a renamed port, a memif id moved between ports); if it still fails then, the
        // apply is undone.
        let deletes_ports = changes
            .iter()
            .any(|c| matches!(c, Change::Remove(o) if port_of(&**o).is_some()));
        let mut prebuilt: HashMap<String, Box<dyn Port>> = HashMap::new();
        for c in &changes {
            let Change::Add(o) = c else { continue };
            let Some(port) = port_of(&**o) else { continue };
            if self.running.port(port.name()).is_none() {
                match (self.factory)(port) {
                    Ok(p) => {
                        prebuilt.insert(port.name().to_string(), p);
                    }
                    Err(_) if deletes_ports => {}
                    Err(e) => return Err(ControlError::PortOpen(Box::new(e))),
                }
            }
        }
        let factory = Arc::clone(&self.factory);
        let ch = changes.clone();
        let queued = queue(&*self.worker, move |sw| {
            apply_changes(sw, &ch, prebuilt, &*factory)
        })?;
        match queued.wait(self.deadline)? {
            Ok(applied) => applied?,
            Err(q) => {
                let what = summarize(&changes);
                let err = self.late(
                    &q,
                    &what,
                    "will be applied when the worker runs (then `show version` counts it in changes applied; if the switch refuses it, nothing changes and `show version` says so)",
                );
                self.overdue = Some(Overdue {
                    what,
                    at: q.at,
                    kind: OverdueKind::Change {
                        queued: q,
                        new: Box::new(new),
                        count: changes.len() as u64,
                        path: None,
                    },
                });
                return Err(err);
            }
        }
        self.running = new;
        self.applied += changes.len() as u64;
        if changes.len() > TRIM_AFTER_CHANGES {
            vecswitch_ports::heap::release_free_heap();
        }
        Ok(changes)
    }

    /// Re-reads a config file (`path`, or the one the switch runs from) and applies it.
    pub fn reload(&mut self, path: Option<PathBuf>) -> Result<Vec<Change>, ControlError> {
        self.worker_free()?;
        let path = self.reload_path(path)?;
        let new = read_config(&path)?;
        let changes = match self.set_config(new) {
            Err(e @ ControlError::Late { .. }) => {
                // Queued: the file becomes the one the switch runs from when it is applied.
                if let Some(Overdue {
                    kind: OverdueKind::Change { path: p, .. },
                    ..
                }) = &mut self.overdue
                {
                    *p = Some(path);
                }
                return Err(e);
            }
            r => r?,
        };
        self.config_path = Some(path);
        Ok(changes)
    }

    /// The changes a reload of `path` would make, checked like a reload, applied not at all.
    pub fn plan(&self, path: Option<PathBuf>) -> Result<Vec<Change>, ControlError> {
        let new = read_config(&self.reload_path(path)?)?;
        validate(&new)?;
        check_reloadable(&self.running, &new)?;
        Ok(diff(&self.running, &new))
    }

    /// Checks that `name` is an interface of the running config: a port, or whatever a section
    /// defines as one (a bond, a sub-interface) — the interfaces the sections' validation
    /// collects, so no feature is named here.
    fn port_must_exist(&self, name: &str) -> Result<(), ControlError> {
        if self.running.port(name).is_some() {
            return Ok(());
        }
        let mut v = vecswitch_switch::object::Validation::default();
        for s in crate::sections::SECTIONS {
            (s.validate)(&self.running, &mut v);
        }
        if v.interfaces.contains(name) {
            Ok(())
        } else {
            Err(ControlError::NoPort {
                name: name.to_string(),
                known: v.interface_names(),
            })
        }
    }

    /// Applies one edit to a copy of the running config.
    fn edit(
        &mut self,
        f: impl FnOnce(&mut Config) -> Result<(), ControlError>,
    ) -> Result<Vec<Change>, ControlError> {
        let mut new = self.running.clone();
        f(&mut new)?;
        self.set_config(new)
    }

    /// Answers one request.
    pub fn handle(&mut self, req: Request) -> Response {
        match self.handle_inner(req) {
            Ok(v) => Response::ok(v),
            Err(e) => Response::err(e.to_string()),
        }
    }

    /// A show the controller answers itself ([`crate::sections::CONTROLLER_SHOWS`]).
    fn controller_show(&self, word: &str) -> Result<serde_json::Value, ControlError> {
        match word {
            "config" => json(&self.running),
            "version" => json(VersionInfo {
                version: env!("CARGO_PKG_VERSION").to_string(),
                config: self.config_path.as_ref().map(|p| p.display().to_string()),
                uptime_s: self.started.elapsed().as_secs(),
                changes_applied: self.applied,
                queued: self.overdue.as_ref().map(|o| {
                    format!(
                        "{}, queued {} s ago (its request timed out); not yet run by the worker",
                        o.what,
                        o.at.elapsed().as_secs()
                    )
                }),
                queued_failed: self.queued_failed.clone(),
                ports: self.running.ports.len(),
                bridges: self.running.bridges.len(),
                xconnects: self.running.xconnect_directions().len(),
            }),
            other => Err(ControlError::NoShow {
                what: other.to_string(),
                known: crate::sections::show_words(),
            }),
        }
    }

    fn changed(changes: Vec<Change>) -> Result<serde_json::Value, ControlError> {
        let n = changes.len();
        let mut listed: Vec<String> = changes
            .iter()
            .take(MAX_CHANGES_LISTED)
            .map(Change::describe)
            .collect();
        if n > MAX_CHANGES_LISTED {
            listed.push(format!(
                "... and {} more ({n} changes in all)",
                n - MAX_CHANGES_LISTED
            ));
        }
        json(Changes { changes: listed })
    }

    fn handle_inner(&mut self, req: Request) -> Result<serde_json::Value, ControlError> {
        let done = |r: Result<(), ControlError>| r.map(|_| serde_json::Value::Null);
        // A request the worker has run since it timed out is settled first.
        self.catch_up();
        match req {
            Request::Show { what, args } => {
                let show =
                    crate::sections::find_show(&what).ok_or_else(|| ControlError::NoShow {
                        what: what.clone(),
                        known: crate::sections::show_words(),
                    })?;
                match show {
                    FoundShow::Switch(s) => {
                        let what = format!("`show {}`", s.word);
                        Ok(self.on_worker(&what, move |sw| s.answer(sw, &args))??)
                    }
                    FoundShow::Controller(_) if !args.is_empty() => {
                        Err(ControlError::ShowArgs { what, given: args })
                    }
                    FoundShow::Controller(s) => self.controller_show(s.word),
                }
            }
            Request::ClearCounters {} => {
                done(self.on_worker("`clear counters`", |sw| sw.clear_counters()))
            }
            Request::TraceAdd { count } => {
                done(self.on_worker("`trace add`", move |sw| sw.trace_add(count)))
            }
            Request::TraceClear {} => done(self.on_worker("`trace clear`", |sw| sw.trace_clear())),
            Request::Capture { port, file, count } => {
                // Before the file is created: a capture refused as busy leaves no file behind.
                self.worker_free()?;
                self.port_must_exist(&port)?;
                if file.is_empty() {
                    return Err(ControlError::EmptyCaptureFile);
                }
                vecswitch_switch::capture::check_count(count)?;
                let (path, f) =
                    create_capture_file(Path::new(&self.running.switch.capture_dir), &file)?;
                // The writer thread starts here, on the control side; the worker only queues
                // frames to it (vecswitch_switch::capture).
                let out = std::io::BufWriter::with_capacity(1 << 16, f);
                let capture = PortCapture::start(out, &path, count).map_err(|e| {
                    ControlError::Switch(SwitchError::Capture {
                        port: port.clone(),
                        reason: e.to_string(),
                    })
                })?;
                self.on_worker("`capture`", move |sw| sw.start_capture(&port, capture))??;
                Ok(serde_json::Value::Null)
            }
            Request::CaptureStop { port } => {
                self.port_must_exist(&port)?;
                let mut capture =
                    self.on_worker("`capture stop`", move |sw| sw.take_capture(&port))??;
                // Waited for here, off the worker: a slow disk delays this answer, not forwarding.
                let finished = capture.finish(CAPTURE_FINISH_WITHIN);
                let mut info = capture.info();
                if let Err(e) = finished {
                    info.error.get_or_insert(e.to_string());
                }
                json(info)
            }
            Request::Action { action, args } => {
                let a = crate::sections::find_action(&action).ok_or_else(|| {
                    ControlError::NoAction {
                        action: action.clone(),
                        known: list(vecswitch_switch::ctl::actions().map(|a| a.info().name())),
                    }
                })?;
                let what = format!("`{}`", a.info().name());
                Ok(self.on_worker(&what, move |sw| (a.run)(sw, &args))??)
            }
            Request::ReloadPlan { path } => {
                // A plan against a running config that a queued change is about to replace
                // would be wrong.
                self.worker_free()?;
                let plan = self.plan(path.map(PathBuf::from)).and_then(Self::changed);
                // Whatever the answer, the file's parse and diff are garbage now.
                vecswitch_ports::heap::release_free_heap();
                plan
            }
            Request::Reload { path } => {
                let r = self.reload(path.map(PathBuf::from)).and_then(Self::changed);
                vecswitch_ports::heap::release_free_heap();
                r
            }
            Request::Save { path } => {
                // Not a config that a queued change is about to replace.
                self.worker_free()?;
                json(self.save(path.map(PathBuf::from))?)
            }
            Request::Edit { verb, args } => {
                let v = crate::sections::find_verb(&verb).ok_or_else(|| ControlError::NoVerb {
                    verb: verb.clone(),
                    known: list(crate::sections::verbs().map(|v| v.info.name())),
                })?;
                self.edit(|c| (v.section.edit)(c, v.index, &args).map_err(ControlError::from))
                    .and_then(Self::changed)
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {

    mod deadline {
        //! Issue 14 item 1: a request the worker does not answer by its deadline.
        use super::super::stuck::Stuck;
        use super::super::*;
        use super::{req, BASE};
        use crate::apply::testing::{factory, switch};
        use std::sync::Mutex;
        use std::time::{Duration, Instant};
        use vecswitch_switch::BridgeSettings;
        use vecswitch_switch::WorkerGone;

        const D: WorkerDeadline = WorkerDeadline {
            start: Duration::from_millis(300),
            answer: Duration::from_secs(2),
        };
        /// Scheduling slack on a loaded host: the answer comes after the deadline, and well
        /// before it plus this.
        const SLACK: Duration = Duration::from_secs(10);

        fn start() -> (Controller, Stuck) {
            let w = Stuck::new(Local(Mutex::new(switch())));
            let mut c = Controller::start(
                Box::new(w.clone()),
                Arc::from(factory()),
                Config::from_toml(BASE, "t").unwrap(),
                None,
            )
            .unwrap();
            c.set_worker_deadline(Some(D));
            (c, w)
        }

        fn version(c: &mut Controller) -> VersionInfo {
            let r = req(c, r#"{"cmd":"show","what":"version"}"#);
            serde_json::from_value(r.data.expect("show version answers")).unwrap()
        }

        fn bridges_named(w: &Stuck, name: &str) -> usize {
            let sw = w.local.0.lock().unwrap();
            sw.show_bridges().iter().filter(|b| b.name == name).count()
        }

        /// The timed-out request's error, and how long it took.
        fn late(c: &mut Controller, line: &str) -> (String, Duration) {
            let t0 = Instant::now();
            let r = req(c, line);
            let took = t0.elapsed();
            (r.error.expect("refused"), took)
        }

        #[test]
        fn a_change_past_its_deadline_stays_queued_and_is_applied_exactly_once() {
            let (mut c, w) = start();
            let applied = version(&mut c).changes_applied;
            w.hold();
            let (e, took) = late(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br9"}}"#);
            assert!(
                e.contains("did not answer within")
                    && e.contains("has not started")
                    && e.contains("add bridge br9 stays queued")
                    && e.contains("will be applied when the worker runs"),
                "{e}"
            );
            assert!(took >= D.start && took < D.start + SLACK, "{took:?}");
            // Nothing else queues behind it: changes, reads that need the worker, a reload
            // plan and a save are refused as busy, at once.
            for line in [
                r#"{"cmd":"bridge_add","bridge":{"name":"br8"}}"#,
                r#"{"cmd":"show","what":"ports"}"#,
                r#"{"cmd":"clear_counters"}"#,
                r#"{"cmd":"reload_plan"}"#,
                r#"{"cmd":"save"}"#,
            ] {
                let (e, took) = late(&mut c, line);
                assert!(
                    e.contains("switch busy: the worker has not yet run add bridge br9"),
                    "{line}: {e}"
                );
                assert!(took < D.start, "{line}: refused at once, took {took:?}");
            }
            assert_eq!(w.queued(), 1, "one job queued");
            // The controller still answers what does not need the worker, and believes nothing
            // has changed yet.
            let v = version(&mut c);
            assert_eq!(v.changes_applied, applied);
            assert!(v.queued.unwrap().contains("add bridge br9"));
            assert!(c.running().bridge("br9").is_none());
            let r = req(&mut c, r#"{"cmd":"show","what":"config"}"#);
            assert!(r.ok, "{r:?}");
            // The worker runs: the change is applied once, and the next request sees it.
            assert_eq!(w.release(), 1);
            assert_eq!(bridges_named(&w, "br9"), 1);
            let v = version(&mut c);
            assert_eq!(v.changes_applied, applied + 1);
            assert_eq!(v.queued, None);
            assert_eq!(v.queued_failed, None);
            assert!(c.running().bridge("br9").is_some());
            // Changes go through again, on top of it.
            let r = req(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br8"}}"#);
            assert!(r.ok, "{r:?}");
            assert_eq!(version(&mut c).changes_applied, applied + 2);
            assert_eq!(bridges_named(&w, "br9"), 1);
            assert_eq!(bridges_named(&w, "br8"), 1);
        }

        #[test]
        fn a_queued_change_the_switch_refuses_is_reported_not_believed() {
            let (mut c, w) = start();
            let applied = version(&mut c).changes_applied;
            w.hold();
            let (e, _) = late(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br9"}}"#);
            assert!(e.contains("stays queued"), "{e}");
            // Meanwhile the switch changed under it: the queued apply fails (and is undone).
            w.local
                .0
                .lock()
                .unwrap()
                .add_bridge("br9", BridgeSettings::default())
                .unwrap();
            assert_eq!(w.release(), 1);
            let v = version(&mut c);
            assert_eq!(v.changes_applied, applied);
            assert_eq!(v.queued, None);
            let f = v.queued_failed.expect("the failure is reported");
            assert!(
                f.contains("add bridge br9") && f.contains("refused by the switch"),
                "{f}"
            );
            assert!(c.running().bridge("br9").is_none());
            // The controller is free again.
            let r = req(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br8"}}"#);
            assert!(r.ok, "{r:?}");
        }

        #[test]
        fn a_read_past_its_deadline_holds_back_requests_that_need_the_worker_until_it_ran() {
            let (mut c, w) = start();
            w.hold();
            let (e, took) = late(&mut c, r#"{"cmd":"show","what":"ports"}"#);
            assert!(
                e.contains("`show ports` stays queued") && e.contains("will run when the worker"),
                "{e}"
            );
            assert!(took >= D.start && took < D.start + SLACK, "{took:?}");
            let (e, _) = late(&mut c, r#"{"cmd":"trace_add","count":1}"#);
            assert!(e.contains("switch busy"), "{e}");
            assert_eq!(w.queued(), 1);
            assert_eq!(w.release(), 1);
            let r = req(&mut c, r#"{"cmd":"show","what":"ports"}"#);
            assert!(r.ok, "{r:?}");
        }

        /// A job the worker has started is waited for until `answer`; one it has not started
        /// only until `start`.
        #[test]
        fn a_started_job_gets_the_answer_deadline() {
            /// Runs each job on a thread of its own.
            struct Threaded(Arc<Local>);
            impl Worker for Threaded {
                fn run(&self, job: Job) -> Result<(), WorkerGone> {
                    let l = Arc::clone(&self.0);
                    std::thread::spawn(move || l.run(job));
                    Ok(())
                }
            }
            let w = Threaded(Arc::new(Local(Mutex::new(switch()))));
            let (gate, wait) = mpsc::channel::<()>();
            let t0 = Instant::now();
            let q = queue(&w, move |_| wait.recv().is_ok()).unwrap();
            let q = match q.wait(Some(D)).unwrap() {
                Ok(_) => panic!("answered without the gate"),
                Err(q) => q,
            };
            let took = t0.elapsed();
            assert!(took >= D.answer && took < D.answer + SLACK, "{took:?}");
            assert!(q.why_late().contains("started the request"));
            gate.send(()).unwrap();
            assert!(q.answer.recv().unwrap(), "the job ran to its end");
            assert!(q.done.load(Ordering::Acquire));
        }

        /// The real worker thread (`SwitchHandle::post`), stuck in a job: a change times out,
        /// stays queued, and is applied when the worker gets free.
        #[test]
        fn a_stuck_worker_thread_then_free() {
            let handle = vecswitch_switch::spawn(switch()).unwrap();
            let mut c = Controller::start(
                Box::new(handle),
                Arc::from(factory()),
                Config::from_toml(BASE, "t").unwrap(),
                None,
            )
            .unwrap();
            c.set_worker_deadline(Some(D));
            let applied = version(&mut c).changes_applied;
            let (unblock, blocked) = mpsc::channel::<()>();
            c.worker
                .run(Box::new(move |_| {
                    let _ = blocked.recv();
                }))
                .unwrap();
            let (e, took) = late(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br9"}}"#);
            assert!(
                e.contains("has not started") && e.contains("stays queued"),
                "{e}"
            );
            assert!(took >= D.start && took < D.start + SLACK, "{took:?}");
            unblock.send(()).unwrap();
            let t0 = Instant::now();
            loop {
                let v = version(&mut c);
                if v.queued.is_none() {
                    assert_eq!(v.changes_applied, applied + 1);
                    break;
                }
                assert!(t0.elapsed() < SLACK, "never applied: {v:?}");
                std::thread::sleep(Duration::from_millis(20));
            }
            let r = req(&mut c, r#"{"cmd":"show","what":"bridge","args":["br9"]}"#);
            assert!(r.ok, "{r:?}");
        }
    }

    use super::*;
    use crate::apply::testing::{admin_up, factory, members, snapshot, switch, xconnects};
    use crate::config::{AdminState, PortConfig};
    use crate::protocol::parse_request;
    use crate::protocol::Saved;
    use std::sync::Mutex;
    use vecswitch_switch::WorkerGone;

    const BASE: &str = r#"
[[port]]
name = "p0"
type = "memif"
socket = "/tmp/m.sock"
[[port]]
name = "p1"
type = "memif"
socket = "/tmp/m.sock"
id = 1
[[port]]
name = "v0"
type = "af_packet"
interface = "veth0"
[[xconnect]]
ports = ["p0", "p1"]
[[bridge]]
name = "br0"
ports = ["v0"]
"#;

    /// A controller on a switch in this thread, shared so that the test can look at it.
    fn start() -> (Controller, Arc<Local>) {
        struct Shared(Arc<Local>);
        impl Worker for Shared {
            fn run(&self, job: Job) -> Result<(), WorkerGone> {
                self.0.run(job)
            }
        }
        let local = Arc::new(Local(Mutex::new(switch())));
        let c = Controller::start(
            Box::new(Shared(Arc::clone(&local))),
            Arc::from(factory()),
            Config::from_toml(BASE, "t").unwrap(),
            None,
        )
        .unwrap();
        (c, local)
    }

    fn req(c: &mut Controller, line: &str) -> Response {
        c.handle(parse_request(line).unwrap())
    }

    fn snap(l: &Local) -> String {
        snapshot(&l.0.lock().unwrap(), true)
    }

    #[test]
    fn start_builds_the_config() {
        let (c, l) = start();
        assert_eq!(c.running().ports.len(), 3);
        let sw = l.0.lock().unwrap();
        assert_eq!(sw.show_ports().len(), 3);
        assert_eq!(xconnects(&sw).len(), 2);
    }

    #[test]
    fn invalid_start_is_refused() {
        let local = Local(Mutex::new(switch()));
        let mut cfg = Config::from_toml(BASE, "t").unwrap();
        cfg.bridges[0].ports.push("p0".into());
        let e = Controller::start(Box::new(local), Arc::from(factory()), cfg, None).unwrap_err();
        assert!(e.to_string().contains("bridge[0].ports[1]"), "{e}");
    }

    #[test]
    fn member_add_and_remove_go_through_validation() {
        let (mut c, l) = start();
        let r = req(
            &mut c,
            r#"{"cmd":"port_add","port":{"type":"af_packet","name":"v1","interface":"veth1"}}"#,
        );
        assert!(r.ok, "{r:?}");
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_add","bridge":"br0","port":"v1"}"#,
        );
        assert!(r.ok, "{r:?}");
        assert_eq!(r.data.unwrap()["changes"][0], "add port v1 to bridge br0");
        assert!(members(&l.0.lock().unwrap(), "br0").contains(&"v1".to_string()));
        // p0 is in an xconnect: refused by the same rule as in a file, nothing changes.
        let before = snap(&l);
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_add","bridge":"br0","port":"p0"}"#,
        );
        assert!(!r.ok);
        assert!(r.error.as_ref().unwrap().contains("xconnect[0]"), "{r:?}");
        assert_eq!(snap(&l), before);
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_remove","bridge":"br0","port":"v1"}"#,
        );
        assert!(r.ok, "{r:?}");
        assert!(!members(&l.0.lock().unwrap(), "br0").contains(&"v1".to_string()));
    }

    #[test]
    fn unknown_names_are_reported_with_the_known_ones() {
        let (mut c, _) = start();
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_add","bridge":"nope","port":"v0"}"#,
        );
        assert_eq!(
            r.error.unwrap(),
            "bridge = \"nope\": the name of a bridge-domain; bridges are: br0"
        );
        let r = req(&mut c, r#"{"cmd":"port_delete","name":"zz"}"#);
        assert!(r.error.unwrap().contains("interfaces are: p0, p1, v0"));
        let r = req(&mut c, r#"{"cmd":"port_delete","name":"v0"}"#);
        assert!(r.error.unwrap().contains("member of bridge \"br0\""));
    }

    #[test]
    fn xconnect_delete_keeps_the_other_direction() {
        let (mut c, l) = start();
        let r = req(&mut c, r#"{"cmd":"xconnect_delete","from":"p0"}"#);
        assert!(r.ok, "{r:?}");
        assert_eq!(
            xconnects(&l.0.lock().unwrap()),
            vec![("p1".to_string(), "p0".to_string())]
        );
        assert_eq!(
            c.running().xconnect_directions(),
            vec![("p1".to_string(), "p0".to_string())]
        );
        let r = req(&mut c, r#"{"cmd":"xconnect_delete","from":"p0"}"#);
        assert!(r.error.unwrap().contains("from = \"p0\""));
    }

    #[test]
    fn static_macs_and_bridges() {
        let (mut c, l) = start();
        let r = req(
            &mut c,
            r#"{"cmd":"mac_add","bridge":"br0","mac":"02:00:00:00:00:07","port":"v0"}"#,
        );
        assert!(r.ok, "{r:?}");
        assert_eq!(l.0.lock().unwrap().show_mac(None).unwrap().len(), 1);
        let r = req(
            &mut c,
            r#"{"cmd":"mac_add","bridge":"br0","mac":"ff:ff:ff:ff:ff:ff","port":"v0"}"#,
        );
        assert!(r.error.unwrap().contains("bridge[0].static_mac[1].mac"));
        let r = req(
            &mut c,
            r#"{"cmd":"mac_delete","bridge":"br0","mac":"02:00:00:00:00:07"}"#,
        );
        assert!(r.ok, "{r:?}");
        assert!(l.0.lock().unwrap().show_mac(None).unwrap().is_empty());
        let r = req(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br1"}}"#);
        assert!(r.ok, "{r:?}");
        let r = req(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br1"}}"#);
        assert!(r.error.unwrap().contains("bridge[2].name = \"br1\""));
        let r = req(&mut c, r#"{"cmd":"bridge_delete","name":"br1"}"#);
        assert!(r.ok, "{r:?}");
        assert!(!l
            .0
            .lock()
            .unwrap()
            .show_bridges()
            .iter()
            .any(|b| b.name == "br1"));
    }

    #[test]
    fn port_open_failure_changes_nothing() {
        let (mut c, l) = start();
        let before = snap(&l);
        let r = req(
            &mut c,
            r#"{"cmd":"port_add","port":{"type":"af_packet","name":"bad1","interface":"veth5"}}"#,
        );
        assert!(r.error.unwrap().contains("cannot open bad1"));
        assert_eq!(snap(&l), before);
        assert!(c.running().port("bad1").is_none());
    }

    #[test]
    fn reload_path_only_in_the_started_with_directory() {
        let dir = std::env::temp_dir().join(format!("vecswitch-ctl-rdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        let (mut c, _) = start();
        // Not started from a file: no path is accepted.
        let r = c.handle(Request::Reload {
            path: Some("/etc/passwd".into()),
        });
        let e = r.error.unwrap();
        assert!(
            e.contains("path = \"/etc/passwd\"") && e.contains("not started from a file"),
            "{e}"
        );
        c.reload_dir = Some(std::fs::canonicalize(dir.join("etc")).unwrap());
        let outside = dir.join("outside.toml");
        std::fs::write(&outside, BASE).unwrap();
        for p in [
            outside.display().to_string(),
            dir.join("etc/../outside.toml").display().to_string(),
            "/etc/passwd".to_string(),
        ] {
            let r = c.handle(Request::ReloadPlan {
                path: Some(p.clone()),
            });
            let e = r.error.unwrap();
            assert!(
                e.contains("not in the directory") && e.contains("accepted:"),
                "{p}: {e}"
            );
        }
        // A symlink inside pointing outside is resolved and refused.
        std::os::unix::fs::symlink(&outside, dir.join("etc/link.toml")).unwrap();
        let r = c.handle(Request::Reload {
            path: Some(dir.join("etc/link.toml").display().to_string()),
        });
        assert!(r.error.unwrap().contains("not in the directory"));
        // A FIFO inside is refused without being opened.
        let fifo = dir.join("etc/fifo.toml");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo (coreutils)")
            .success());
        let r = c.handle(Request::Reload {
            path: Some(fifo.display().to_string()),
        });
        assert!(r.error.unwrap().contains("not a regular file"));
        // A file inside is read.
        std::fs::write(dir.join("etc/ok.toml"), BASE).unwrap();
        let r = c.handle(Request::ReloadPlan {
            path: Some(dir.join("etc/ok.toml").display().to_string()),
        });
        assert!(r.ok, "{r:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reload_from_file_and_rejected_reload() {
        let dir = std::env::temp_dir().join(format!("vecswitch-ctl-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (mut c, l) = start();
        // As if started from a file in `dir`: `reload PATH` reads files there.
        c.reload_dir = Some(std::fs::canonicalize(&dir).unwrap());
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            format!(
                "{BASE}\n[[port]]\nname = \"v9\"\ntype = \"af_packet\"\ninterface = \"veth9\"\n"
            ),
        )
        .unwrap();
        let r = c.handle(Request::Reload {
            path: Some(good.display().to_string()),
        });
        assert!(r.ok, "{r:?}");
        assert_eq!(
            r.data.unwrap()["changes"],
            serde_json::json!(["add af_packet port v9"])
        );
        let before = snap(&l);
        let running = c.running().clone();
        let bad = dir.join("bad.toml");
        std::fs::write(
            &bad,
            BASE.replace(
                "interface = \"veth0\"",
                "interface = \"veth0\"\nring_size = 5",
            ),
        )
        .unwrap();
        let r = c.handle(Request::Reload {
            path: Some(bad.display().to_string()),
        });
        assert!(r.error.unwrap().contains("ring_size"));
        std::fs::write(
            &bad,
            BASE.replace("ports = [\"v0\"]", "ports = [\"v0\", \"p1\"]"),
        )
        .unwrap();
        let r = c.handle(Request::Reload {
            path: Some(bad.display().to_string()),
        });
        assert!(r.error.unwrap().contains("bridge[0].ports[1]"));
        assert_eq!(snap(&l), before);
        assert_eq!(c.running(), &running);
        // No path: the last good file.
        let r = c.handle(Request::Reload { path: None });
        assert!(r.ok, "{r:?}");
        // A dry run answers the changes and makes none.
        std::fs::write(&good, BASE).unwrap();
        let r = c.handle(Request::ReloadPlan { path: None });
        assert_eq!(
            r.data.unwrap()["changes"],
            serde_json::json!(["delete port v9"])
        );
        assert!(c.running().port("v9").is_some());
        assert!(l.0.lock().unwrap().port_stats("v9").is_ok());
        let r = c.handle(Request::ReloadPlan {
            path: Some(bad.display().to_string()),
        });
        assert!(r.error.unwrap().contains("bridge[0].ports[1]"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A fresh directory under the temp dir, removed on drop.
    pub(crate) struct Rm(pub(crate) std::path::PathBuf);
    impl Drop for Rm {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    pub(crate) fn scratch_dir(tag: &str) -> Rm {
        let dir = std::env::temp_dir().join(format!("vecswitch-ctl-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Rm(dir)
    }

    #[test]
    fn save_only_where_the_switch_may_write() {
        let rm = scratch_dir("sdir");
        let dir = rm.0.clone();
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        let (mut c, _) = start();
        let save = |c: &mut Controller, p: &str| {
            c.handle(Request::Save {
                path: Some(p.to_string()),
            })
        };
        // Not started from a file: no path is accepted.
        let e = save(&mut c, "/tmp/x.toml").error.unwrap();
        assert!(
            e.contains("path = \"/tmp/x.toml\"") && e.contains("not started from a file"),
            "{e}"
        );
        c.reload_dir = Some(std::fs::canonicalize(dir.join("etc")).unwrap());
        let victim = dir.join("victim.toml");
        std::fs::write(&victim, "victim").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("etc/link.toml")).unwrap();
        std::fs::create_dir(dir.join("etc/sub")).unwrap();
        let fifo = dir.join("etc/fifo.toml");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo (coreutils)")
            .success());
        let etc = dir.join("etc").display().to_string();
        for (p, why) in [
            (victim.display().to_string(), "not in the directory"),
            (format!("{etc}/../outside.toml"), "not in the directory"),
            (format!("{etc}/sub/x.toml"), "not in the directory"),
            (
                "/etc/vecswitch-never.toml".to_string(),
                "not in the directory",
            ),
            ("relative.toml".to_string(), "a relative path"),
            (format!("{etc}/link.toml"), "a symbolic link"),
            (format!("{etc}/fifo.toml"), "not a regular file"),
            (format!("{etc}/sub"), "not a regular file"),
            (format!("{etc}/.."), "names no file"),
        ] {
            let e = save(&mut c, &p)
                .error
                .unwrap_or_else(|| panic!("{p}: saved"));
            assert!(
                e.contains(&format!("path = {p:?}")) && e.contains(why) && e.contains("accepted:"),
                "{p}: {e}"
            );
        }
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"victim",
            "link not followed"
        );
        assert!(!dir.join("outside.toml").exists());
        assert!(!std::path::Path::new("/etc/vecswitch-never.toml").exists());
        // A new file in the directory is written; so is the same name again (replaced).
        for _ in 0..2 {
            let r = save(&mut c, &format!("{etc}/new.toml"));
            assert!(r.ok, "{r:?}");
        }
        let mut names: Vec<_> = std::fs::read_dir(dir.join("etc"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["fifo.toml", "link.toml", "new.toml", "sub"]);
    }

    #[test]
    fn save_writes_the_running_config_atomically() {
        let rm = scratch_dir("save");
        let dir = rm.0.clone();
        let (mut c, _) = start();
        std::fs::create_dir_all(&dir).unwrap();
        c.reload_dir = Some(std::fs::canonicalize(&dir).unwrap());
        // Not started from a file and no path: refused, naming what is missing.
        let r = c.handle(Request::Save { path: None });
        assert!(r.error.unwrap().contains("no path given"));
        // A run-time change, then save: the file reads back as the running config.
        let r = req(&mut c, r#"{"cmd":"bridge_add","bridge":{"name":"br9"}}"#);
        assert!(r.ok, "{r:?}");
        let file = dir.join("saved.toml");
        std::fs::write(&file, "old contents").unwrap();
        let r = c.handle(Request::Save {
            path: Some(file.display().to_string()),
        });
        assert!(r.ok, "{r:?}");
        let saved: Saved = serde_json::from_value(r.data.unwrap()).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(saved.bytes, text.len());
        assert_eq!(&Config::from_toml(&text, "saved").unwrap(), c.running());
        // Only the file itself is left (the temporary one was renamed over it).
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["saved.toml"]);
        // Reloading what was saved changes nothing; a later save without a path goes there.
        let r = c.handle(Request::Reload {
            path: Some(file.display().to_string()),
        });
        assert_eq!(r.data.unwrap()["changes"], serde_json::json!([]));
        req(&mut c, r#"{"cmd":"bridge_delete","name":"br9"}"#);
        let r = c.handle(Request::Save { path: None });
        assert!(r.ok, "{r:?}");
        assert!(!std::fs::read_to_string(&file).unwrap().contains("br9"));
        // A directory that does not exist: the error names the path and the cause.
        let bad = dir.join("no/such/dir/x.toml");
        let r = c.handle(Request::Save {
            path: Some(bad.display().to_string()),
        });
        let e = r.error.unwrap();
        assert!(e.contains("x.toml") && e.contains("No such file"), "{e}");
    }

    #[test]
    fn switch_section_cannot_change_at_runtime() {
        let (mut c, _) = start();
        let mut new = c.running().clone();
        new.switch.buffers *= 2;
        let e = c.set_config(new).unwrap_err();
        assert!(e.to_string().contains("switch.buffers"), "{e}");
    }

    #[test]
    fn show_and_counters_reach_the_dataplane() {
        let (mut c, l) = start();
        let r = req(&mut c, r#"{"cmd":"show","what":"ports"}"#);
        assert_eq!(r.data.unwrap().as_array().unwrap().len(), 3);
        let r = req(&mut c, r#"{"cmd":"trace_add","count":5}"#);
        assert!(r.ok);
        {
            // The trace is armed: a frame received on v0 is traced.
            let mut sw = l.0.lock().unwrap();
            let h = sw.pool_mut().alloc().unwrap();
            let frame = vecswitch_switch::testing::frame64([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
            assert!(sw.pool_mut().write_packet(h, &frame));
            sw.inject(2, &[h]);
            assert!(!sw.show_trace().is_empty());
        }
        let r = req(&mut c, r#"{"cmd":"show","what":"config"}"#);
        let back: Config = serde_json::from_value(r.data.unwrap()).unwrap();
        assert_eq!(&back, c.running());
        let r = req(&mut c, r#"{"cmd":"show","what":"runtime","bridge":"br0"}"#);
        let e = r.error.unwrap();
        assert!(
            e.contains("show runtime") && e.contains("no argument"),
            "{e}"
        );
        let r = req(&mut c, r#"{"cmd":"port_state","name":"p0","up":false}"#);
        assert!(r.ok);
        assert!(!admin_up(&l.0.lock().unwrap(), "p0"));
        assert_eq!(
            c.running().port("p0").map(PortConfig::admin),
            Some(AdminState::Down)
        );
    }
}
