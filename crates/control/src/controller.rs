//! [`Controller`]: the control plane's state — the running [`Config`] and the way to reach the
//! dataplane (a [`Worker`]) — and the one path every change takes: [`Controller::set_config`]
//! validates the new config whole, refuses `[switch]` changes, diffs it against the running one,
//! opens new ports before touching the switch, applies the changes on the worker (all or nothing,
//! see [`crate::apply`]) and only then makes it the running config.
//!
//! Socket requests ([`Controller::handle`]) that change something (`port add`, `bridge member add`,
//! `mac add`, ...) are edits of a copy of the running config sent down the same path, so they are
//! checked by the same rules as a config file and `show config` always describes the switch. A
//! `reload` makes the file the truth again: what was added at run time and is not in the file goes.

use crate::apply::{apply_changes, describe, ApplyError, Dataplane, PortFactory};
use crate::config::{AdminState, Config, ParseError, StaticMacConfig, XconnectConfig};
use crate::diff::{check_reloadable, diff, Change};
use crate::protocol::{Request, Response, ShowWhat};
use crate::validate::{parse_mac, validate, ValidationErrors};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use vecswitch_ports::Port;

/// A closure to run on the dataplane.
pub type Job = Box<dyn FnOnce(&mut dyn Dataplane) + Send>;

/// Where the dataplane runs: [`Worker::run`] runs a job on it (for the real switch, on the worker
/// thread between poll iterations through `SwitchHandle::call`).
pub trait Worker: Send + Sync {
    fn run(&self, job: Job) -> Result<(), String>;
    /// Whether the dataplane still runs (a worker thread that panicked does not).
    fn is_alive(&self) -> bool {
        true
    }
}

impl Worker for vecswitch_switch::SwitchHandle {
    fn run(&self, job: Job) -> Result<(), String> {
        self.call(move |sw: &mut vecswitch_switch::Switch| job(sw))
            .map_err(|e| e.to_string())
    }
    fn is_alive(&self) -> bool {
        self.is_running()
    }
}

/// A dataplane driven in the caller's thread (tests; a switch that is not spawned).
#[derive(Debug)]
pub struct Local<D>(pub Mutex<D>);

impl<D: Dataplane + Send> Worker for Local<D> {
    fn run(&self, job: Job) -> Result<(), String> {
        let mut d = self.0.lock().unwrap_or_else(|p| p.into_inner());
        job(&mut *d);
        Ok(())
    }
}

/// Runs `f` on the worker and returns its result.
pub fn exec<R, F>(w: &dyn Worker, f: F) -> Result<R, String>
where
    R: Send + 'static,
    F: FnOnce(&mut dyn Dataplane) -> R + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    w.run(Box::new(move |dp| {
        let _ = tx.send(f(dp));
    }))?;
    rx.recv()
        .map_err(|_| "the switch worker did not answer".to_string())
}

/// Why a change was refused.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Invalid(#[from] ValidationErrors),
    #[error("cannot open port: {0} (nothing was changed)")]
    PortOpen(String),
    #[error(transparent)]
    Apply(#[from] ApplyError),
    #[error("{0}")]
    Worker(String),
    /// A request that names something that does not exist, or asks for what cannot be.
    #[error("{0}")]
    Request(String),
}

/// The control plane's state. See the module doc.
pub struct Controller {
    worker: Box<dyn Worker>,
    factory: Arc<PortFactory>,
    running: Config,
    config_path: Option<PathBuf>,
    started: std::time::Instant,
    /// Changes applied since start (the initial build included), for `show version`.
    applied: u64,
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
    /// Builds `config` onto an empty dataplane (validating it first).
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
        let mut c = Controller {
            worker,
            factory,
            running: empty,
            config_path,
            started: std::time::Instant::now(),
            applied: 0,
        };
        c.set_config(config)?;
        Ok(c)
    }

    /// Whether the dataplane's worker still runs.
    pub fn worker_alive(&self) -> bool {
        self.worker.is_alive()
    }

    /// The running config.
    pub fn running(&self) -> &Config {
        &self.running
    }

    /// Makes `new` the running config (see the module doc). Returns the changes made.
    pub fn set_config(&mut self, new: Config) -> Result<Vec<Change>, ControlError> {
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
            .any(|c| matches!(c, Change::DeletePort { .. }));
        let mut prebuilt: HashMap<String, Box<dyn Port>> = HashMap::new();
        for c in &changes {
            if let Change::AddPort { port } = c {
                if self.running.port(port.name()).is_none() {
                    match (self.factory)(port) {
                        Ok(p) => {
                            prebuilt.insert(port.name().to_string(), p);
                        }
                        Err(_) if deletes_ports => {}
                        Err(e) => return Err(ControlError::PortOpen(e)),
                    }
                }
            }
        }
        let old = self.running.clone();
        let factory = Arc::clone(&self.factory);
        let ch = changes.clone();
        exec(&*self.worker, move |dp| {
            apply_changes(dp, &ch, &old, prebuilt, &*factory)
        })
        .map_err(ControlError::Worker)??;
        self.running = new;
        self.applied += changes.len() as u64;
        Ok(changes)
    }

    /// Re-reads a config file (`path`, or the one the switch runs from) and applies it.
    pub fn reload(&mut self, path: Option<PathBuf>) -> Result<Vec<Change>, ControlError> {
        let path = self.reload_path(path)?;
        let new = Config::from_file(&path)?;
        let changes = self.set_config(new)?;
        self.config_path = Some(path);
        Ok(changes)
    }

    fn reload_path(&self, path: Option<PathBuf>) -> Result<PathBuf, ControlError> {
        path.or_else(|| self.config_path.clone()).ok_or_else(|| {
            ControlError::Request(
                "reload: no path given and the switch was not started from a file".into(),
            )
        })
    }

    /// The changes a reload of `path` would make, checked like a reload, applied not at all.
    pub fn plan(&self, path: Option<PathBuf>) -> Result<Vec<Change>, ControlError> {
        let new = Config::from_file(&self.reload_path(path)?)?;
        validate(&new)?;
        check_reloadable(&self.running, &new)?;
        Ok(diff(&self.running, &new))
    }

    fn known_ports(&self) -> String {
        let v: Vec<&str> = self.running.ports.iter().map(|p| p.name()).collect();
        if v.is_empty() {
            "(none)".into()
        } else {
            v.join(", ")
        }
    }

    fn known_bridges(&self) -> String {
        let v: Vec<&str> = self
            .running
            .bridges
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        if v.is_empty() {
            "(none)".into()
        } else {
            v.join(", ")
        }
    }

    fn bridge_index(&self, name: &str) -> Result<usize, ControlError> {
        self.running
            .bridges
            .iter()
            .position(|b| b.name == name)
            .ok_or_else(|| {
                ControlError::Request(format!(
                    "bridge = {name:?}: the name of a bridge-domain; bridges are: {}",
                    self.known_bridges()
                ))
            })
    }

    fn port_must_exist(&self, name: &str) -> Result<(), ControlError> {
        if self.running.port(name).is_some() {
            Ok(())
        } else {
            Err(ControlError::Request(format!(
                "port = {name:?}: the name of a port; ports are: {}",
                self.known_ports()
            )))
        }
    }

    /// Applies one edit to a copy of the running config.
    fn edit(
        &mut self,
        f: impl FnOnce(&mut Config, &Controller) -> Result<(), ControlError>,
    ) -> Result<Vec<Change>, ControlError> {
        let mut new = self.running.clone();
        f(&mut new, self)?;
        self.set_config(new)
    }

    /// Answers one request.
    pub fn handle(&mut self, req: Request) -> Response {
        match self.handle_inner(req) {
            Ok(v) => Response::ok(v),
            Err(e) => Response::err(e.to_string()),
        }
    }

    fn changed(changes: Vec<Change>) -> serde_json::Value {
        serde_json::json!({ "changes": changes.iter().map(describe).collect::<Vec<_>>() })
    }

    fn handle_inner(&mut self, req: Request) -> Result<serde_json::Value, ControlError> {
        let w = &*self.worker;
        let done = |r: Result<(), String>| {
            r.map(|_| serde_json::Value::Null)
                .map_err(ControlError::Request)
        };
        match req {
            Request::Show {
                what: ShowWhat::Config, ..
            } => serde_json::to_value(&self.running).map_err(|e| ControlError::Worker(e.to_string())),
            Request::Show {
                what: ShowWhat::Version,
                ..
            } => Ok(serde_json::json!({
                "version": env!("CARGO_PKG_VERSION"),
                "config": self.config_path.as_ref().map(|p| p.display().to_string()),
                "uptime_s": self.started.elapsed().as_secs(),
                "changes_applied": self.applied,
                "ports": self.running.ports.len(),
                "bridges": self.running.bridges.len(),
                "xconnects": self.running.xconnect_directions().len(),
            })),
            Request::Show { what, bridge } => {
                if let Some(b) = &bridge {
                    if !matches!(what, ShowWhat::Bridge | ShowWhat::Mac) {
                        return Err(ControlError::Request(format!(
                            "bridge = {b:?}: only `show bridge` and `show mac` take a bridge name"
                        )));
                    }
                }
                exec(w, move |dp| dp.show(what, bridge.as_deref()))
                    .map_err(ControlError::Worker)?
                    .map_err(ControlError::Request)
            }
            Request::ClearCounters {} => done(exec(w, |dp| dp.clear_counters())),
            Request::TraceAdd { count } => done(exec(w, move |dp| dp.trace_add(count))),
            Request::TraceClear {} => done(exec(w, |dp| dp.trace_clear())),
            Request::Capture { port, file, count } => {
                self.port_must_exist(&port)?;
                if file.is_empty() {
                    return Err(ControlError::Request("file = \"\": a path for the pcap file".into()));
                }
                exec(w, move |dp| dp.capture(&port, &file, count))
                    .map_err(ControlError::Worker)?
                    .map_err(ControlError::Request)
                    .map(|_| serde_json::Value::Null)
            }
            Request::CaptureStop { port } => {
                self.port_must_exist(&port)?;
                exec(w, move |dp| dp.capture_stop(&port))
                    .map_err(ControlError::Worker)?
                    .map_err(ControlError::Request)
            }
            Request::MacFlush { bridge, port } => {
                self.bridge_index(&bridge)?;
                let n = exec(w, move |dp| dp.flush_mac(&bridge, port.as_deref()))
                    .map_err(ControlError::Worker)?
                    .map_err(ControlError::Request)?;
                Ok(serde_json::json!({ "flushed": n }))
            }
            Request::ReloadPlan { path } => self.plan(path.map(PathBuf::from)).map(Self::changed),
            Request::Reload { path } => self.reload(path.map(PathBuf::from)).map(Self::changed),
            Request::PortAdd { port } => self
                .edit(|c, _| {
                    c.ports.push(port);
                    Ok(())
                })
                .map(Self::changed),
            Request::PortDelete { name } => self
                .edit(|c, me| {
                    me.port_must_exist(&name)?;
                    if let Some(b) = c.bridges.iter().find(|b| b.ports.contains(&name)) {
                        return Err(ControlError::Request(format!(
                            "port {name:?} is a member of bridge {:?}; remove it first (bridge member del {} {name})",
                            b.name, b.name
                        )));
                    }
                    if c.xconnect_directions().iter().any(|(f, t)| *f == name || *t == name) {
                        return Err(ControlError::Request(format!(
                            "port {name:?} is cross-connected; remove the xconnect first (xconnect del ...)"
                        )));
                    }
                    c.ports.retain(|p| p.name() != name);
                    Ok(())
                })
                .map(Self::changed),
            Request::PortState { name, up } => self
                .edit(|c, me| {
                    me.port_must_exist(&name)?;
                    for p in c.ports.iter_mut().filter(|p| p.name() == name) {
                        p.set_admin(if up { AdminState::Up } else { AdminState::Down });
                    }
                    Ok(())
                })
                .map(Self::changed),
            Request::BridgeAdd { bridge } => self
                .edit(|c, _| {
                    c.bridges.push(bridge);
                    Ok(())
                })
                .map(Self::changed),
            Request::BridgeDelete { name } => self
                .edit(|c, me| {
                    let i = me.bridge_index(&name)?;
                    c.bridges.remove(i);
                    Ok(())
                })
                .map(Self::changed),
            Request::BridgeMemberAdd { bridge, port } => self
                .edit(|c, me| {
                    let i = me.bridge_index(&bridge)?;
                    me.port_must_exist(&port)?;
                    c.bridges[i].ports.push(port);
                    Ok(())
                })
                .map(Self::changed),
            Request::BridgeMemberRemove { bridge, port } => self
                .edit(|c, me| {
                    let i = me.bridge_index(&bridge)?;
                    let b = &mut c.bridges[i];
                    if !b.ports.contains(&port) {
                        return Err(ControlError::Request(format!(
                            "port = {port:?}: a member of bridge {bridge:?}; its members are: {}",
                            if b.ports.is_empty() {
                                "(none)".into()
                            } else {
                                b.ports.join(", ")
                            }
                        )));
                    }
                    b.ports.retain(|p| *p != port);
                    // Its static MACs go with it.
                    b.static_mac.retain(|s| s.port != port);
                    Ok(())
                })
                .map(Self::changed),
            Request::XconnectAdd { from, to, both } => self
                .edit(|c, me| {
                    me.port_must_exist(&from)?;
                    me.port_must_exist(&to)?;
                    if both {
                        c.xconnects.push(XconnectConfig {
                            ports: Some(vec![from, to]),
                            bidirectional: true,
                            from: None,
                            to: None,
                        });
                    } else {
                        c.xconnects.push(XconnectConfig::one_way(&from, &to));
                    }
                    Ok(())
                })
                .map(Self::changed),
            Request::XconnectDelete { from } => self
                .edit(|c, _| {
                    let mut found = false;
                    let mut out = Vec::new();
                    for x in c.xconnects.drain(..) {
                        let dirs = x.directions();
                        if !dirs.iter().any(|(f, _)| *f == from) {
                            out.push(x);
                            continue;
                        }
                        found = true;
                        // Keep the other direction of an E-Line.
                        for (f, t) in dirs.into_iter().filter(|(f, _)| *f != from) {
                            out.push(XconnectConfig::one_way(&f, &t));
                        }
                    }
                    c.xconnects = out;
                    if found {
                        Ok(())
                    } else {
                        Err(ControlError::Request(format!(
                            "from = {from:?}: a port with a cross-connect"
                        )))
                    }
                })
                .map(Self::changed),
            Request::MacAdd { bridge, mac, port } => self
                .edit(|c, me| {
                    let i = me.bridge_index(&bridge)?;
                    c.bridges[i].static_mac.push(StaticMacConfig { mac, port });
                    Ok(())
                })
                .map(Self::changed),
            Request::MacDelete { bridge, mac } => self
                .edit(|c, me| {
                    let i = me.bridge_index(&bridge)?;
                    let m = parse_mac(&mac).ok_or_else(|| {
                        ControlError::Request(format!("mac = {mac:?}: a MAC address like 02:00:00:00:00:01"))
                    })?;
                    let b = &mut c.bridges[i];
                    let before = b.static_mac.len();
                    b.static_mac.retain(|s| parse_mac(&s.mac) != Some(m));
                    if b.static_mac.len() == before {
                        return Err(ControlError::Request(format!(
                            "mac = {mac:?}: a static MAC of bridge {bridge:?}"
                        )));
                    }
                    Ok(())
                })
                .map(Self::changed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::fake::{factory, Fake};
    use crate::config::{BridgeConfig, PortConfig};
    use crate::protocol::parse_request;

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

    /// A controller on a shared fake dataplane (so the test can look at it).
    fn start() -> (Controller, Arc<Local<Fake>>) {
        struct Shared(Arc<Local<Fake>>);
        impl Worker for Shared {
            fn run(&self, job: Job) -> Result<(), String> {
                self.0.run(job)
            }
        }
        let local = Arc::new(Local(Mutex::new(Fake::default())));
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

    fn snapshot(l: &Local<Fake>) -> String {
        l.0.lock().unwrap().snapshot()
    }

    #[test]
    fn start_builds_the_config() {
        let (c, l) = start();
        assert_eq!(c.running().ports.len(), 3);
        let f = l.0.lock().unwrap();
        assert_eq!(f.ports.len(), 3);
        assert_eq!(f.xconnects.len(), 2);
    }

    #[test]
    fn invalid_start_is_refused() {
        let local = Local(Mutex::new(Fake::default()));
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
        assert!(l.0.lock().unwrap().bridges["br0"].1.contains("v1"));
        // p0 is in an xconnect: refused by the same rule as in a file, nothing changes.
        let before = snapshot(&l);
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_add","bridge":"br0","port":"p0"}"#,
        );
        assert!(!r.ok);
        assert!(r.error.as_ref().unwrap().contains("xconnect[0]"), "{r:?}");
        assert_eq!(snapshot(&l), before);
        let r = req(
            &mut c,
            r#"{"cmd":"bridge_member_remove","bridge":"br0","port":"v1"}"#,
        );
        assert!(r.ok, "{r:?}");
        assert!(!l.0.lock().unwrap().bridges["br0"].1.contains("v1"));
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
        assert!(r.error.unwrap().contains("ports are: p0, p1, v0"));
        let r = req(&mut c, r#"{"cmd":"port_delete","name":"v0"}"#);
        assert!(r.error.unwrap().contains("member of bridge \"br0\""));
    }

    #[test]
    fn xconnect_delete_keeps_the_other_direction() {
        let (mut c, l) = start();
        let r = req(&mut c, r#"{"cmd":"xconnect_delete","from":"p0"}"#);
        assert!(r.ok, "{r:?}");
        let f = l.0.lock().unwrap();
        assert_eq!(f.xconnects.len(), 1);
        assert_eq!(f.xconnects.get("p1").map(String::as_str), Some("p0"));
        drop(f);
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
        assert_eq!(l.0.lock().unwrap().macs.len(), 1);
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
        assert!(l.0.lock().unwrap().macs.is_empty());
        let r = c.handle(Request::BridgeAdd {
            bridge: BridgeConfig::new("br1"),
        });
        assert!(r.ok, "{r:?}");
        let r = c.handle(Request::BridgeAdd {
            bridge: BridgeConfig::new("br1"),
        });
        assert!(r.error.unwrap().contains("bridge[2].name = \"br1\""));
        let r = req(&mut c, r#"{"cmd":"bridge_delete","name":"br1"}"#);
        assert!(r.ok, "{r:?}");
        assert!(!l.0.lock().unwrap().bridges.contains_key("br1"));
    }

    #[test]
    fn port_open_failure_changes_nothing() {
        let (mut c, l) = start();
        let before = snapshot(&l);
        let r = req(
            &mut c,
            r#"{"cmd":"port_add","port":{"type":"af_packet","name":"bad1","interface":"veth5"}}"#,
        );
        assert!(r.error.unwrap().contains("cannot open bad1"));
        assert_eq!(snapshot(&l), before);
        assert!(c.running().port("bad1").is_none());
    }

    #[test]
    fn reload_from_file_and_rejected_reload() {
        let dir = std::env::temp_dir().join(format!("vecswitch-ctl-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (mut c, l) = start();
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
        let before = snapshot(&l);
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
        assert_eq!(snapshot(&l), before);
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
        assert!(l.0.lock().unwrap().ports.contains_key("v9"));
        let r = c.handle(Request::ReloadPlan {
            path: Some(bad.display().to_string()),
        });
        assert!(r.error.unwrap().contains("bridge[0].ports[1]"));
        let _ = std::fs::remove_dir_all(&dir);
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
        assert_eq!(l.0.lock().unwrap().traced, 5);
        let r = req(&mut c, r#"{"cmd":"show","what":"config"}"#);
        let back: Config = serde_json::from_value(r.data.unwrap()).unwrap();
        assert_eq!(&back, c.running());
        let r = req(&mut c, r#"{"cmd":"show","what":"runtime","bridge":"br0"}"#);
        assert!(r
            .error
            .unwrap()
            .contains("only `show bridge` and `show mac`"));
        let r = req(&mut c, r#"{"cmd":"port_state","name":"p0","up":false}"#);
        assert!(r.ok);
        assert!(!l.0.lock().unwrap().ports["p0"].1);
        assert_eq!(
            c.running().port("p0").map(PortConfig::admin),
            Some(AdminState::Down)
        );
    }
}
