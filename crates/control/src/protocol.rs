//! The control socket protocol: one JSON object per line each way.
//!
//! A request is an object whose `cmd` names the command; the other keys are its arguments:
//!
//! ```text
//! {"cmd":"show","what":"ports"}
//! {"cmd":"show","what":"mac","bridge":"br0"}
//! {"cmd":"trace_add","count":10}
//! {"cmd":"edit","verb":"bridge member add","args":["br0","p2"]}
//! {"cmd":"action","action":"mac flush","args":["br0"]}
//! {"cmd":"bridge_member_add","bridge":"br0","port":"p2"}
//! {"cmd":"port_add","port":{"type":"memif","name":"p2","socket":"/run/m.sock","id":2}}
//! ```
//!
//! Every change is an `edit` with a registered verb's words, as `vecswitch ctl` sends them; the
//! older commands of the port and L2 verbs (`port_add`, `bridge_member_add`, `mac_flush`, ...)
//! are still read with their keys and become the same `edit` (or `action`) request.
//!
//! The answer is `{"ok":true,"data":...}` or `{"ok":false,"error":"..."}`. A request that cannot be
//! read gets an error naming the field and value ([`parse_request`]), never a dropped connection.
//! The list of commands is [`Request`]; `docs/CONTROL.md` documents each.

use crate::config::{BridgeConfig, PortConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest request line the server reads (bytes, newline included).
pub const MAX_REQUEST_LINE: usize = 1 << 20;

/// One control request. On the wire the variant name is the `cmd` key (snake_case) and the fields
/// are the other keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// `show WHAT [ARGS]`: `what` is a registered show's word ([`crate::sections::find_show`]:
    /// `ports`, `mac`, `bond`, ...), `args` its arguments (`show mac br0`: `["br0"]`). The
    /// older `"bridge":"br0"` key is read as `"args":["br0"]`.
    Show {
        what: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
    },
    /// Zeroes port, node and error counters.
    ClearCounters {},
    /// Traces the next `count` packets.
    TraceAdd { count: u32 },
    /// Forgets the trace.
    TraceClear {},
    /// Writes the next `count` packets seen on `port` to the pcap file `file`.
    Capture {
        port: String,
        file: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// Stops the capture on `port` and answers what was written.
    CaptureStop { port: String },
    /// Re-reads the config file (`path`, or the one the switch was started with) and applies the
    /// difference; an invalid file is rejected whole and nothing changes.
    /// Like `reload`, but only answers the changes it would make (`reload --dry-run`).
    ReloadPlan {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    Reload {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// Writes the running config as TOML to `path` (absolute), or to the file the switch runs
    /// from: a temporary file in the same directory, then renamed over it (atomic).
    Save {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// A `ctl` verb a feature registered ([`crate::sections::find_verb`]), by its canonical name,
    /// with its arguments: `{"cmd":"edit","verb":"subinterface add","args":["uni0","20","dot1q","20"]}`.
    /// It edits a copy of the running config, which goes down the same validate → diff → apply
    /// path as every change. The older keys `edit` and `words` are read as `verb` and `args`.
    Edit {
        #[serde(alias = "edit")]
        verb: String,
        #[serde(default, alias = "words")]
        args: Vec<String>,
    },
    /// A `ctl` action a feature registered ([`crate::sections::find_action`]): a command that
    /// acts on the running switch without changing its config, by its canonical name, with its
    /// arguments: `{"cmd":"action","action":"mac flush","args":["br0"]}`.
    Action {
        action: String,
        #[serde(default)]
        args: Vec<String>,
    },
}

/// The requests of protocol version 1 that are now a registered verb or action (the L2 feature's
/// and the ports'), still accepted with their keys: [`parse_request`] reads them with the same
/// serde rules as before (so a bad key or value is named as before) and makes them the
/// [`Request::Edit`] (or [`Request::Action`]) with the words `vecswitch ctl` would send, so the
/// answers are those of the verb.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Legacy {
    /// `port add` (same keys as a `[[port]]` table).
    PortAdd { port: PortConfig },
    /// `port del`.
    PortDelete { name: String },
    /// `port up|down`.
    PortState { name: String, up: bool },
    /// `bridge add` (same keys as a `[[bridge]]` table; `ports` and `static_mac` allowed).
    BridgeAdd { bridge: BridgeConfig },
    /// `bridge del`.
    BridgeDelete { name: String },
    /// `bridge member add`.
    BridgeMemberAdd { bridge: String, port: String },
    /// `bridge member del`.
    BridgeMemberRemove { bridge: String, port: String },
    /// `xconnect add [--both]`.
    XconnectAdd {
        from: String,
        to: String,
        #[serde(default)]
        both: bool,
    },
    /// `xconnect del`.
    XconnectDelete { from: String },
    /// `mac add`.
    MacAdd {
        bridge: String,
        mac: String,
        port: String,
    },
    /// `mac del`.
    MacDelete { bridge: String, mac: String },
    /// The action `mac flush`.
    MacFlush {
        bridge: String,
        #[serde(default)]
        port: Option<String>,
    },
}

/// The `cmd` values of [`Legacy`].
const LEGACY: &[&str] = &[
    "port_add",
    "port_delete",
    "port_state",
    "bridge_add",
    "bridge_delete",
    "bridge_member_add",
    "bridge_member_remove",
    "xconnect_add",
    "xconnect_delete",
    "mac_add",
    "mac_delete",
    "mac_flush",
];

impl Legacy {
    /// The request `vecswitch ctl` sends for the same command.
    fn into_request(self) -> Request {
        let edit = |verb: &str, args: Vec<String>| Request::Edit {
            verb: verb.to_string(),
            args,
        };
        match self {
            Legacy::PortAdd { port } => edit("port add", crate::ports_ctl::add_words(&port)),
            Legacy::PortDelete { name } => edit("port del", vec![name]),
            Legacy::PortState { name, up } => {
                edit(if up { "port up" } else { "port down" }, vec![name])
            }
            Legacy::BridgeAdd { bridge } => edit("bridge add", bridge_add_words(&bridge)),
            Legacy::BridgeDelete { name } => edit("bridge del", vec![name]),
            Legacy::BridgeMemberAdd { bridge, port } => {
                edit("bridge member add", vec![bridge, port])
            }
            Legacy::BridgeMemberRemove { bridge, port } => {
                edit("bridge member del", vec![bridge, port])
            }
            Legacy::XconnectAdd { from, to, both } => {
                let mut w = vec![from, to];
                if both {
                    w.push("--both".into());
                }
                edit("xconnect add", w)
            }
            Legacy::XconnectDelete { from } => edit("xconnect del", vec![from]),
            Legacy::MacAdd { bridge, mac, port } => edit("mac add", vec![bridge, mac, port]),
            Legacy::MacDelete { bridge, mac } => edit("mac del", vec![bridge, mac]),
            Legacy::MacFlush { bridge, port } => Request::Action {
                action: "mac flush".into(),
                args: std::iter::once(bridge).chain(port).collect(),
            },
        }
    }
}

/// The words of `bridge add` for a `[[bridge]]` table: the name, the settings that are not the
/// defaults, the members and the static MACs.
fn bridge_add_words(b: &BridgeConfig) -> Vec<String> {
    let d = BridgeConfig::new(&b.name);
    let mut w = vec![b.name.clone()];
    for (on, off, flag) in [
        (b.learn, d.learn, "--no-learn"),
        (b.forward, d.forward, "--no-forward"),
        (b.flood, d.flood, "--no-flood"),
        (b.uu_flood, d.uu_flood, "--no-uu-flood"),
    ] {
        if on != off {
            w.push(flag.into());
        }
    }
    if b.mac_age != d.mac_age {
        w.extend(["--mac-age".into(), b.mac_age.to_string()]);
    }
    if b.mac_limit != d.mac_limit {
        w.extend(["--mac-limit".into(), b.mac_limit.to_string()]);
    }
    for p in &b.ports {
        w.extend(["--port".into(), p.clone()]);
    }
    for m in &b.static_mac {
        w.extend(["--static-mac".into(), m.mac.to_string(), m.port.clone()]);
    }
    w
}

/// The answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Response {
    pub fn ok(data: Value) -> Response {
        Response {
            ok: true,
            data: Some(data),
            error: None,
        }
    }
    pub fn err(msg: impl Into<String>) -> Response {
        Response {
            ok: false,
            data: None,
            error: Some(msg.into()),
        }
    }
    /// One line of JSON (no newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!(r#"{{"ok":false,"error":"cannot encode response: {e}"}}"#))
    }
}

/// The answer to `show version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    pub version: String,
    /// The config file the switch runs from, if any.
    pub config: Option<String>,
    pub uptime_s: u64,
    /// Changes applied since start (the initial build included).
    pub changes_applied: u64,
    /// A request the worker did not answer by its deadline and has not run yet (it stays queued;
    /// until it has run, requests that need the worker are refused as busy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<String>,
    /// The last queued change the switch refused when it ran it (after its request had timed out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_failed: Option<String>,
    pub ports: usize,
    pub bridges: usize,
    /// Cross-connect directions.
    pub xconnects: usize,
}

/// The answer to a request that changes the config (and to `reload_plan`): the changes, described.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changes {
    pub changes: Vec<String>,
}

/// The answer to `save`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub path: String,
    pub bytes: usize,
}

/// The answer to `mac flush` (the L2 feature's action).
pub use vecswitch_switch::l2::ctl::Flushed;

/// A request line that could not be understood: one variant per way, each naming the field, the
/// value as sent and what is accepted. On the wire it is the `error` string of the answer
/// (`bad request: ...`, unchanged since protocol version 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The line is not JSON.
    #[error("bad request: not a JSON object ({reason}); send one object per line, e.g. {{\"cmd\":\"show\",\"what\":\"ports\"}}")]
    NotJson { reason: String },
    /// JSON, but not an object.
    #[error("bad request: request = {value}: a JSON object with a \"cmd\" key")]
    NotObject { value: String },
    /// No `cmd` key.
    #[error("bad request: cmd: missing; one of {accepted}")]
    NoCommand { accepted: String },
    /// `cmd` is not a string.
    #[error("bad request: cmd = {value}: a string, one of {accepted}")]
    CommandNotString { value: String, accepted: String },
    /// `cmd` names no command.
    #[error("bad request: cmd = {value:?}: one of {accepted}")]
    UnknownCommand { value: String, accepted: String },
    /// An argument of the command (`count`, `port.ring_size`, `args[0]`) has a value that is not
    /// accepted, or is missing (`value` is `(missing)`).
    #[error("bad request: {cmd}: {field} = {value}: {accepted}")]
    Field {
        cmd: String,
        field: String,
        value: String,
        accepted: String,
    },
    /// The arguments as a whole are refused (an unknown key, a missing one serde names).
    #[error("bad request: {cmd}: {reason}")]
    Arguments { cmd: String, reason: String },
    /// `show` or `edit` names no registered show or verb.
    #[error("bad request: {cmd}: {field} = {value}: one of {accepted}")]
    Unregistered {
        cmd: &'static str,
        field: &'static str,
        value: String,
        accepted: String,
    },
}

impl RequestError {
    /// The field at fault (`cmd`, `count`, `port.ring_size`, `what`), if one is named.
    pub fn field(&self) -> Option<&str> {
        match self {
            RequestError::NotJson { .. } | RequestError::NotObject { .. } => None,
            RequestError::Arguments { .. } => None,
            RequestError::NoCommand { .. }
            | RequestError::CommandNotString { .. }
            | RequestError::UnknownCommand { .. } => Some("cmd"),
            RequestError::Field { field, .. } => Some(field),
            RequestError::Unregistered { field, .. } => Some(field),
        }
    }
}

/// The `cmd` values [`parse_request`] accepts.
pub const COMMANDS: &[&str] = &[
    "show",
    "clear_counters",
    "trace_add",
    "trace_clear",
    "capture",
    "capture_stop",
    "action",
    "port_add",
    "port_delete",
    "port_state",
    "bridge_add",
    "bridge_delete",
    "bridge_member_add",
    "bridge_member_remove",
    "xconnect_add",
    "xconnect_delete",
    "mac_add",
    "mac_delete",
    "mac_flush",
    "reload",
    "reload_plan",
    "save",
    "edit",
];

fn show_value(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        format!(
            "{}…",
            &s[..s.char_indices().nth(80).map_or(s.len(), |(i, _)| i)]
        )
    } else {
        s
    }
}

/// Encodes a request as one line of JSON (no newline): `{"cmd":..., args...}`.
pub fn encode_request(r: &Request) -> String {
    // `cmd` first, for people reading the socket with `socat`.
    let Ok(Value::Object(m)) = serde_json::to_value(r) else {
        return String::from("{}");
    };
    let Some((cmd, args)) = m.into_iter().next() else {
        return String::from("{}");
    };
    let mut out = format!("{{\"cmd\":{}", Value::String(cmd));
    if let Value::Object(a) = args {
        for (k, v) in a {
            out.push(',');
            out.push_str(&Value::String(k).to_string());
            out.push(':');
            out.push_str(&v.to_string());
        }
    }
    out.push('}');
    out
}

/// Parses one request line. Errors name the field (`cmd`, `count`, `port.ring_size`, ...), the
/// value and what is accepted.
pub fn parse_request(line: &str) -> Result<Request, RequestError> {
    let v: Value = serde_json::from_str(line.trim()).map_err(|e| RequestError::NotJson {
        reason: e.to_string(),
    })?;
    let Value::Object(mut obj) = v else {
        return Err(RequestError::NotObject {
            value: show_value(&v),
        });
    };
    let accepted = || COMMANDS.join(", ");
    let cmd = match obj.remove("cmd") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(RequestError::CommandNotString {
                value: show_value(&other),
                accepted: accepted(),
            })
        }
        None => {
            return Err(RequestError::NoCommand {
                accepted: accepted(),
            })
        }
    };
    if !COMMANDS.contains(&cmd.as_str()) {
        return Err(RequestError::UnknownCommand {
            value: cmd,
            accepted: accepted(),
        });
    }
    // `show`'s older `"bridge":"br0"` is its first argument.
    if cmd == "show" && !obj.contains_key("args") {
        if let Some(b) = obj.remove("bridge") {
            obj.insert("args".into(), Value::Array(vec![b]));
        }
    }
    let args = Value::Object(obj);
    if LEGACY.contains(&cmd.as_str()) {
        return registered(deserialize_cmd::<Legacy>(cmd, args)?.into_request());
    }
    registered(deserialize_cmd::<Request>(cmd, args)?)
}

/// The request `cmd` with its arguments `args`, as a `T` (an enum tagged by the command name);
/// errors name the field, the value and what serde accepts.
fn deserialize_cmd<T: serde::de::DeserializeOwned>(
    cmd: String,
    args: Value,
) -> Result<T, RequestError> {
    let wrapped = Value::Object(Map::from_iter([(cmd.clone(), args.clone())]));
    serde_path_to_error::deserialize::<_, T>(wrapped).map_err(|e| {
        // The path starts with the command name (the enum tag); drop it.
        let path = e.path().to_string();
        let field = path
            .strip_prefix(&cmd)
            .unwrap_or(&path)
            .trim_start_matches('.')
            .to_string();
        let inner = e.into_inner().to_string();
        // `[[port]]` tables are tagged by `type`; serde reports their errors without the key, so
        // look again with the variant's own struct to name it.
        if cmd == "port_add" && field == "port" {
            if let Some(e) = port_field_error(&cmd, args.get("port")) {
                return e;
            }
        }
        if field.is_empty() || field == "?" {
            RequestError::Arguments { cmd, reason: inner }
        } else {
            let value = lookup(&args, &field)
                .map(show_value)
                .unwrap_or_else(|| "(missing)".into());
            RequestError::Field {
                cmd,
                field,
                value,
                accepted: inner,
            }
        }
    })
}

/// Checks that a `show`, `edit` or `action` names something registered, and names it canonically (an
/// alias becomes the word).
fn registered(req: Request) -> Result<Request, RequestError> {
    match req {
        Request::Show { what, args } => match crate::sections::find_show(&what) {
            Some(s) => Ok(Request::Show {
                what: s.word().to_string(),
                args,
            }),
            None => Err(RequestError::Unregistered {
                cmd: "show",
                field: "what",
                value: show_value(&Value::String(what)),
                accepted: crate::sections::show_words(),
            }),
        },
        Request::Edit { verb, args } => match crate::sections::find_verb(&verb) {
            Some(_) => Ok(Request::Edit { verb, args }),
            None => Err(RequestError::Unregistered {
                cmd: "edit",
                field: "verb",
                value: show_value(&Value::String(verb)),
                accepted: crate::sections::verbs()
                    .map(|v| v.info.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        },
        Request::Action { action, args } => match crate::sections::find_action(&action) {
            Some(_) => Ok(Request::Action { action, args }),
            None => Err(RequestError::Unregistered {
                cmd: "action",
                field: "action",
                value: show_value(&Value::String(action)),
                accepted: vecswitch_switch::ctl::actions()
                    .map(|a| a.info().name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        },
        other => Ok(other),
    }
}

/// For a `port` object that does not deserialize: the error with the key path inside it
/// (`port.ring_size = "big": invalid type ...`), found by deserializing with the struct of its
/// `type`.
fn port_field_error(cmd: &str, port: Option<&Value>) -> Option<RequestError> {
    use crate::config::{AfPacketPortConfig, AfXdpPortConfig, MemifPortConfig};
    let mut obj = port?.as_object()?.clone();
    let ty = obj.remove("type")?;
    let v = Value::Object(obj);
    let err = match ty.as_str()? {
        "memif" => serde_path_to_error::deserialize::<_, MemifPortConfig>(v.clone()).err()?,
        "af_packet" => {
            serde_path_to_error::deserialize::<_, AfPacketPortConfig>(v.clone()).err()?
        }
        "af_xdp" => serde_path_to_error::deserialize::<_, AfXdpPortConfig>(v.clone()).err()?,
        _ => return None,
    };
    let path = err.path().to_string();
    let inner = err.into_inner().to_string();
    if path.is_empty() || path == "." || path == "?" {
        return Some(RequestError::Arguments {
            cmd: cmd.to_string(),
            reason: format!("port: {inner}"),
        });
    }
    let value = lookup(&v, &path)
        .map(show_value)
        .unwrap_or_else(|| "(missing)".into());
    Some(RequestError::Field {
        cmd: cmd.to_string(),
        field: format!("port.{path}"),
        value,
        accepted: inner,
    })
}

/// The value at a dotted path like `port.ring_size` or `bridge.ports[1]`.
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.') {
        let (key, idx) = match part.find('[') {
            Some(i) => (
                &part[..i],
                part[i + 1..].trim_end_matches(']').parse::<usize>().ok(),
            ),
            None => (part, None),
        };
        if !key.is_empty() {
            cur = cur.get(key)?;
        }
        if let Some(i) = idx {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_command() {
        let reqs = vec![
            Request::Show {
                what: "ports".into(),
                args: vec![],
            },
            Request::Show {
                what: "mac".into(),
                args: vec!["br0".into()],
            },
            Request::Edit {
                verb: "subinterface add".into(),
                args: vec!["p0".into(), "10".into(), "dot1q".into(), "10".into()],
            },
            Request::ClearCounters {},
            Request::TraceAdd { count: 7 },
            Request::TraceClear {},
            Request::Capture {
                port: "p0".into(),
                file: "/tmp/x.pcap".into(),
                count: Some(5),
            },
            Request::CaptureStop { port: "p0".into() },
            Request::Action {
                action: "mac flush".into(),
                args: vec!["b".into(), "p".into()],
            },
            Request::Reload { path: None },
            Request::ReloadPlan {
                path: Some("/x.toml".into()),
            },
            Request::Reload {
                path: Some("/etc/x.toml".into()),
            },
        ];
        for r in reqs {
            let line = encode_request(&r);
            assert!(line.starts_with("{\"cmd\":"), "{line}");
            assert!(!line.contains('\n'));
            assert_eq!(parse_request(&line).unwrap(), r, "{line}");
        }
    }

    /// The commands of protocol version 1 that are registered verbs (and an action) now: every
    /// one is still accepted with its keys, as the request `vecswitch ctl` sends for it.
    #[test]
    fn older_commands_are_the_verbs_requests() {
        let edit = |verb: &str, args: &[&str]| Request::Edit {
            verb: verb.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        for (line, want) in [
            (
                r#"{"cmd":"port_delete","name":"p0"}"#,
                edit("port del", &["p0"]),
            ),
            (
                r#"{"cmd":"port_state","name":"p0","up":false}"#,
                edit("port down", &["p0"]),
            ),
            (
                r#"{"cmd":"port_state","name":"p0","up":true}"#,
                edit("port up", &["p0"]),
            ),
            (
                r#"{"cmd":"bridge_add","bridge":{"name":"br9"}}"#,
                edit("bridge add", &["br9"]),
            ),
            (
                r#"{"cmd":"bridge_add","bridge":{"name":"br9","learn":false,"mac_age":0,"ports":["p0"],"static_mac":[{"mac":"02:00:00:00:00:01","port":"p0"}]}}"#,
                edit(
                    "bridge add",
                    &[
                        "br9",
                        "--no-learn",
                        "--mac-age",
                        "0",
                        "--port",
                        "p0",
                        "--static-mac",
                        "02:00:00:00:00:01",
                        "p0",
                    ],
                ),
            ),
            (
                r#"{"cmd":"bridge_delete","name":"br9"}"#,
                edit("bridge del", &["br9"]),
            ),
            (
                r#"{"cmd":"bridge_member_add","bridge":"b","port":"p"}"#,
                edit("bridge member add", &["b", "p"]),
            ),
            (
                r#"{"cmd":"bridge_member_remove","bridge":"b","port":"p"}"#,
                edit("bridge member del", &["b", "p"]),
            ),
            (
                r#"{"cmd":"xconnect_add","from":"a","to":"b","both":true}"#,
                edit("xconnect add", &["a", "b", "--both"]),
            ),
            (
                r#"{"cmd":"xconnect_add","from":"a","to":"b"}"#,
                edit("xconnect add", &["a", "b"]),
            ),
            (
                r#"{"cmd":"xconnect_delete","from":"a"}"#,
                edit("xconnect del", &["a"]),
            ),
            (
                r#"{"cmd":"mac_add","bridge":"b","mac":"02:00:00:00:00:01","port":"p"}"#,
                edit("mac add", &["b", "02:00:00:00:00:01", "p"]),
            ),
            (
                r#"{"cmd":"mac_delete","bridge":"b","mac":"02:00:00:00:00:01"}"#,
                edit("mac del", &["b", "02:00:00:00:00:01"]),
            ),
            (
                r#"{"cmd":"port_add","port":{"type":"memif","name":"p9","socket":"/tmp/a.sock","id":3}}"#,
                edit(
                    "port add",
                    &["p9", "memif", "socket=\"/tmp/a.sock\"", "id=3"],
                ),
            ),
        ] {
            let got = parse_request(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            match (&got, &want) {
                // The port's other keys (defaults written out) follow its own.
                (Request::Edit { verb, args }, Request::Edit { verb: v, args: a })
                    if v == "port add" =>
                {
                    assert_eq!(verb, v);
                    for w in a {
                        assert!(args.contains(w), "{line}: {w} not in {args:?}");
                    }
                }
                _ => assert_eq!(got, want, "{line}"),
            }
        }
        for line in [
            r#"{"cmd":"mac_flush","bridge":"b","port":"p"}"#,
            r#"{"cmd":"mac_flush","bridge":"b"}"#,
        ] {
            let Request::Action { action, args } = parse_request(line).unwrap() else {
                panic!("{line}")
            };
            assert_eq!(action, "mac flush");
            assert_eq!(args[0], "b");
        }
        // An older command's bad key is named as before.
        let e = err(r#"{"cmd":"bridge_member_add","bridge":"b"}"#);
        assert!(e.contains("port"), "{e}");
        let e = err(r#"{"cmd":"xconnect_add","from":"a","to":"b","both":"yes"}"#);
        assert!(e.contains("both = \"yes\""), "{e}");
    }

    #[test]
    fn wire_format_is_flat() {
        assert_eq!(
            parse_request(r#"{"cmd":"trace_add","count":3}"#).unwrap(),
            Request::TraceAdd { count: 3 }
        );
        assert_eq!(
            parse_request(r#" {"what":"ports","cmd":"show"} "#).unwrap(),
            Request::Show {
                what: "ports".into(),
                args: vec![]
            }
        );
        // The older forms: `bridge` for show's argument, `edit`/`words` for an edit.
        assert_eq!(
            parse_request(r#"{"cmd":"show","what":"mac","bridge":"br0"}"#).unwrap(),
            Request::Show {
                what: "mac".into(),
                args: vec!["br0".into()]
            }
        );
        assert_eq!(
            parse_request(r#"{"cmd":"edit","edit":"mtu","words":["p0","1500"]}"#).unwrap(),
            Request::Edit {
                verb: "mtu".into(),
                args: vec!["p0".into(), "1500".into()]
            }
        );
        // An alias is named canonically.
        assert_eq!(
            parse_request(r#"{"cmd":"show","what":"int"}"#).unwrap(),
            Request::Show {
                what: "interfaces".into(),
                args: vec![]
            }
        );
        let r =
            parse_request(r#"{"cmd":"port_add","port":{"type":"memif","name":"p9","socket":"/tmp/a.sock","id":3}}"#)
                .unwrap();
        match r {
            Request::Edit { verb, args } => {
                assert_eq!((verb.as_str(), args[0].as_str()), ("port add", "p9"))
            }
            other => panic!("{other:?}"),
        }
    }

    fn err(line: &str) -> String {
        parse_request(line).unwrap_err().to_string()
    }

    #[test]
    fn malformed_requests_name_field_and_value() {
        let e = err("not json");
        assert!(e.contains("not a JSON object"), "{e}");
        let e = err("[1,2]");
        assert!(e.contains("request = [1,2]"), "{e}");
        let e = err(r#"{"what":"ports"}"#);
        assert!(e.contains("cmd: missing"), "{e}");
        let e = err(r#"{"cmd":"explode"}"#);
        assert!(e.contains("cmd = \"explode\"") && e.contains("show"), "{e}");
        let e = err(r#"{"cmd":5}"#);
        assert!(e.contains("cmd = 5"), "{e}");
        let e = err(r#"{"cmd":"trace_add","count":"many"}"#);
        assert!(e.contains("count = \"many\""), "{e}");
        let e = err(r#"{"cmd":"trace_add","count":-1}"#);
        assert!(e.contains("count = -1"), "{e}");
        let e = err(r#"{"cmd":"trace_add"}"#);
        assert!(e.contains("count"), "{e}");
        let e = err(r#"{"cmd":"show","what":"everything"}"#);
        assert!(
            e.contains("what = \"everything\"") && e.contains("runtime"),
            "{e}"
        );
        let e = err(r#"{"cmd":"show","what":"ports","colour":"red"}"#);
        assert!(e.contains("colour"), "{e}");
        let e = err(
            r#"{"cmd":"port_add","port":{"type":"memif","name":"p","socket":"/x","ring_size":"big"}}"#,
        );
        assert!(e.contains("port.ring_size = \"big\""), "{e}");
        let e = err(
            r#"{"cmd":"port_add","port":{"type":"af_packet","name":"p","interface":"x","colour":1}}"#,
        );
        assert!(e.contains("colour"), "{e}");
        let e = err(r#"{"cmd":"port_add","port":{"type":"tap","name":"p"}}"#);
        assert!(e.contains("tap") && e.contains("memif"), "{e}");
    }

    #[test]
    fn errors_are_typed_and_name_the_field() {
        let e = parse_request(r#"{"cmd":"trace_add","count":"many"}"#).unwrap_err();
        assert_eq!(e.field(), Some("count"));
        assert!(matches!(&e, RequestError::Field { value, .. } if value == "\"many\""));
        let e = parse_request(
            r#"{"cmd":"port_add","port":{"type":"memif","name":"p","socket":"/x","ring_size":"big"}}"#,
        )
        .unwrap_err();
        assert_eq!(e.field(), Some("port.ring_size"));
        let e = parse_request(r#"{"cmd":"show","what":"x"}"#).unwrap_err();
        assert_eq!(e.field(), Some("what"));
        assert!(matches!(e, RequestError::Unregistered { cmd: "show", .. }));
        assert_eq!(
            parse_request("{").unwrap_err().field(),
            None,
            "not JSON names no field"
        );
        // The wire text is what it was as a string (protocol version 1).
        assert_eq!(
            parse_request(r#"{"cmd":"explode"}"#)
                .unwrap_err()
                .to_string(),
            format!(
                "bad request: cmd = \"explode\": one of {}",
                COMMANDS.join(", ")
            )
        );
    }

    #[test]
    fn unregistered_show_and_verb_are_refused() {
        let e = err(r#"{"cmd":"edit","verb":"frobnicate","args":[]}"#);
        assert!(
            e.contains("verb = \"frobnicate\"") && e.contains("subinterface add"),
            "{e}"
        );
        for w in crate::sections::show_words().split(", ") {
            let line = format!(r#"{{"cmd":"show","what":"{w}"}}"#);
            assert!(parse_request(&line).is_ok(), "{w}");
        }
    }

    #[test]
    fn responses_encode_as_documented() {
        assert_eq!(
            Response::ok(serde_json::json!([1])).to_line(),
            r#"{"ok":true,"data":[1]}"#
        );
        assert_eq!(
            Response::err("no").to_line(),
            r#"{"ok":false,"error":"no"}"#
        );
    }
}
