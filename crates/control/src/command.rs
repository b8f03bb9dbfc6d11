//! The words of `vecswitch ctl <command...>` (vppctl-like) turned into a [`Request`]:
//! [`parse_words`]. Relative file paths (`reload FILE`, `capture PORT FILE`) are made absolute
//! against the caller's directory, since the switch runs elsewhere.
//!
//! ```text
//! show WHAT [ARGS]       (every registered show: `ctl show` lists them)
//! clear counters
//! trace add N | trace clear
//! capture PORT FILE [COUNT] | capture stop PORT
//! port add NAME TYPE [KEY=VALUE ...]      e.g. port add p2 memif socket=/run/m.sock id=2
//! port del NAME | port up NAME | port down NAME
//! bridge add NAME [--no-learn] [--no-forward] [--no-flood] [--no-uu-flood] [--mac-age S] [--mac-limit N]
//! bridge del NAME
//! bridge member add|del BRIDGE PORT
//! xconnect add FROM TO [--both] | xconnect del FROM
//! mac add BRIDGE MAC PORT | mac del BRIDGE MAC | mac flush BRIDGE [PORT]
//! reload [--dry-run] [FILE]
//! save [FILE]
//! VERB [ARGS]            (every verb a feature registers: `subinterface add ...`, `bond add ...`,
//!                         `mtu IFACE BYTES`; listed by `ctl` with no command)
//! ```
//!
//! The shows and the feature verbs are looked up in the registration lists
//! ([`crate::sections::find_show`], [`crate::sections::match_verb`]); help is generated from them.

use crate::config::{BridgeConfig, PortConfig};
use crate::protocol::Request;
use serde::Deserialize;
use std::path::Path;

/// The usage text printed with a command error.
pub const USAGE: &str = "commands:
  show WHAT [ARGS]                     (see the list of shows below)
  clear counters
  trace add N | trace clear
  capture PORT FILE [COUNT] | capture stop PORT
  port add NAME TYPE [KEY=VALUE ...]   (TYPE memif|af_packet|af_xdp|vhost_user; keys as in [[port]])
  port del NAME | port up NAME | port down NAME
  bridge add NAME [--no-learn] [--no-forward] [--no-flood] [--no-uu-flood] [--mac-age S] [--mac-limit N]
  bridge del NAME
  bridge member add|del BRIDGE PORT
  xconnect add FROM TO [--both] | xconnect del FROM
  mac add BRIDGE MAC PORT | mac del BRIDGE MAC | mac flush BRIDGE [PORT]
  reload [--dry-run] [FILE]
  save [FILE]                          (the running config as TOML; default: the file the switch runs from)";

/// [`USAGE`] with every registered show and verb ([`crate::sections`]).
pub fn usage() -> String {
    let mut u = USAGE.to_string();
    u.push_str("\nverbs registered by features:");
    for v in crate::sections::verbs() {
        u.push_str(&format!(
            "\n  {} {}   ({})",
            v.info.name(),
            v.info.usage,
            v.info.help
        ));
    }
    u.push('\n');
    u.push_str(&shows_help());
    u
}

/// Every registered show under a `shows:` heading.
pub fn shows_help() -> String {
    format!("shows:\n{}", show_lines())
}

/// Every registered show, one per line with what it shows.
fn show_lines() -> String {
    crate::sections::shows()
        .map(|s| format!("  {:<28} {}", s.usage(), s.help()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn absolute(p: &str, cwd: &Path) -> String {
    let path = Path::new(p);
    if path.is_absolute() {
        p.to_string()
    } else {
        cwd.join(path).display().to_string()
    }
}

/// `ctl` words that do not make a request; each names what was given and what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// Wrong number of words.
    #[error("`{given}`: expected `{usage}`")]
    Usage { given: String, usage: &'static str },
    /// A value that does not parse (`N = "many": a packet count`).
    #[error("{what} = {value:?}: {accepted}")]
    Value {
        what: &'static str,
        value: String,
        accepted: &'static str,
    },
    /// A word that is not one of the accepted ones (`show "x": one of ...`).
    #[error("{cmd} {word:?}: {accepted}")]
    Choice {
        cmd: &'static str,
        word: String,
        accepted: String,
    },
    /// A word of a command's arguments that is refused (`port add: "x": a KEY=VALUE pair`).
    #[error("{cmd}: {word:?}: {accepted}")]
    Word {
        cmd: &'static str,
        word: String,
        accepted: &'static str,
    },
    #[error("port add: {key}: given as NAME and TYPE already")]
    PortKeyTwice { key: String },
    /// The `KEY=VALUE` pairs do not make a `[[port]]` table (serde names the key and value).
    #[error("port add: {0}")]
    PortTable(String),
    #[error("bridge add: {opt} needs a value")]
    MissingValue { opt: &'static str },
    /// `show` with no word or one that is not registered: the list of shows.
    #[error("{}\n{list}", no_show(.word))]
    NoShow { word: String, list: String },
    /// More words than the show takes.
    #[error("`{given}`: takes {accepted}")]
    ShowArgument { given: String, accepted: String },
    #[error("unknown command `{0}`")]
    Unknown(String),
}

/// The first line of [`CommandError::NoShow`].
fn no_show(word: &str) -> String {
    if word.is_empty() {
        "show what? one of the registered shows:".into()
    } else {
        format!("show {word:?}: not a registered show; one of:")
    }
}

fn num<T: std::str::FromStr>(
    what: &'static str,
    v: &str,
    accepted: &'static str,
) -> Result<T, CommandError> {
    v.parse().map_err(|_| CommandError::Value {
        what,
        value: v.to_string(),
        accepted,
    })
}

fn arity(w: &[&str], n: usize, usage: &'static str) -> Result<(), CommandError> {
    if w.len() == n {
        Ok(())
    } else {
        Err(usage_error(w, usage))
    }
}

fn usage_error(w: &[&str], usage: &'static str) -> CommandError {
    CommandError::Usage {
        given: w.join(" "),
        usage,
    }
}

/// A `KEY=VALUE` value as TOML: integers and booleans typed, anything else a string.
fn toml_value(v: &str) -> toml::Value {
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if v == "true" || v == "false" {
        toml::Value::Boolean(v == "true")
    } else {
        toml::Value::String(v.to_string())
    }
}

fn port_add(w: &[&str]) -> Result<Request, CommandError> {
    if w.len() < 4 {
        return Err(usage_error(&w[..2], "port add NAME TYPE [KEY=VALUE ...]"));
    }
    let mut t = toml::map::Map::new();
    t.insert("name".into(), toml::Value::String(w[2].into()));
    t.insert("type".into(), toml::Value::String(w[3].into()));
    for kv in &w[4..] {
        let (k, v) = kv.split_once('=').ok_or_else(|| CommandError::Word {
            cmd: "port add",
            word: kv.to_string(),
            accepted: "a KEY=VALUE pair, e.g. socket=/run/m.sock",
        })?;
        if k == "name" || k == "type" {
            return Err(CommandError::PortKeyTwice { key: k.to_string() });
        }
        t.insert(k.to_string(), toml_value(v));
    }
    let port = PortConfig::deserialize(toml::Value::Table(t))
        .map_err(|e| CommandError::PortTable(e.to_string().trim().to_string()))?;
    Ok(Request::PortAdd { port })
}

fn bridge_add(w: &[&str]) -> Result<Request, CommandError> {
    if w.len() < 3 {
        return Err(usage_error(&w[..2], "bridge add NAME [options]"));
    }
    let mut b = BridgeConfig::new(w[2]);
    let mut i = 3;
    while i < w.len() {
        match w[i] {
            "--no-learn" => b.learn = false,
            "--no-forward" => b.forward = false,
            "--no-flood" => b.flood = false,
            "--no-uu-flood" => b.uu_flood = false,
            flag @ ("--mac-age" | "--mac-limit") => {
                let opt = if flag == "--mac-age" {
                    "--mac-age"
                } else {
                    "--mac-limit"
                };
                let v = w
                    .get(i + 1)
                    .ok_or(CommandError::MissingValue { opt })?;
                if opt == "--mac-age" {
                    b.mac_age = num("--mac-age", v, "seconds, 0..=4294967295 (0 = never age)")?;
                } else {
                    b.mac_limit = num("--mac-limit", v, "a number of entries")?;
                }
                i += 1;
            }
            other => {
                return Err(CommandError::Word {
                    cmd: "bridge add",
                    word: other.to_string(),
                    accepted: "one of --no-learn, --no-forward, --no-flood, --no-uu-flood, --mac-age S, --mac-limit N",
                })
            }
        }
        i += 1;
    }
    Ok(Request::BridgeAdd { bridge: b })
}

fn show(w: &[&str]) -> Result<Request, CommandError> {
    let word = w.get(1).copied().unwrap_or("");
    let found = crate::sections::find_show(word).ok_or_else(|| CommandError::NoShow {
        word: word.to_string(),
        list: show_lines(),
    })?;
    let args: Vec<String> = w.iter().skip(2).map(|s| s.to_string()).collect();
    let takes = match found {
        crate::sections::FoundShow::Switch(s) => (s.args.len(), s.args_help()),
        crate::sections::FoundShow::Controller(_) => (0, "no argument".to_string()),
    };
    if args.len() > takes.0 {
        return Err(CommandError::ShowArgument {
            given: w.join(" "),
            accepted: takes.1,
        });
    }
    Ok(Request::Show {
        what: found.word().to_string(),
        args,
    })
}

/// Parses the command words. `cwd` resolves relative file paths.
pub fn parse_words(words: &[String], cwd: &Path) -> Result<Request, CommandError> {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let first = w.first().copied().unwrap_or("");
    let second = w.get(1).copied().unwrap_or("");
    match (first, second) {
        ("show", _) => show(&w),
        ("clear", "counters") => arity(&w, 2, "clear counters").map(|_| Request::ClearCounters {}),
        ("trace", "add") => {
            arity(&w, 3, "trace add N")?;
            Ok(Request::TraceAdd {
                count: num("N", w[2], "a packet count, 0..=4294967295")?,
            })
        }
        ("trace", "clear") => arity(&w, 2, "trace clear").map(|_| Request::TraceClear {}),
        ("capture", "stop") if w.len() == 3 => Ok(Request::CaptureStop { port: w[2].into() }),
        ("capture", _) => {
            if w.len() != 3 && w.len() != 4 {
                return Err(usage_error(&w[..1], "capture PORT FILE [COUNT]"));
            }
            let count = w
                .get(3)
                .map(|c| num("COUNT", c, "a packet count"))
                .transpose()?;
            Ok(Request::Capture {
                port: w[1].into(),
                // As given: the switch resolves a relative name inside its capture directory.
                file: w[2].into(),
                count,
            })
        }
        ("port", "add") => port_add(&w),
        ("port", "del" | "delete") => {
            arity(&w, 3, "port del NAME")?;
            Ok(Request::PortDelete { name: w[2].into() })
        }
        ("port", "up" | "down") => {
            arity(&w, 3, "port up|down NAME")?;
            Ok(Request::PortState {
                name: w[2].into(),
                up: second == "up",
            })
        }
        ("bridge", "add") => bridge_add(&w),
        ("bridge", "del" | "delete") => {
            arity(&w, 3, "bridge del NAME")?;
            Ok(Request::BridgeDelete { name: w[2].into() })
        }
        ("bridge", "member") => {
            arity(&w, 5, "bridge member add|del BRIDGE PORT")?;
            let (bridge, port) = (w[3].to_string(), w[4].to_string());
            match w[2] {
                "add" => Ok(Request::BridgeMemberAdd { bridge, port }),
                "del" | "delete" | "remove" => Ok(Request::BridgeMemberRemove { bridge, port }),
                other => Err(CommandError::Choice {
                    cmd: "bridge member",
                    word: other.to_string(),
                    accepted: "add or del".into(),
                }),
            }
        }
        ("xconnect", "add") => {
            let both = w.get(4) == Some(&"--both");
            arity(
                &w,
                if both { 5 } else { 4 },
                "xconnect add FROM TO [--both]",
            )?;
            Ok(Request::XconnectAdd {
                from: w[2].into(),
                to: w[3].into(),
                both,
            })
        }
        ("xconnect", "del" | "delete") => {
            arity(&w, 3, "xconnect del FROM")?;
            Ok(Request::XconnectDelete { from: w[2].into() })
        }
        ("mac", "add") => {
            arity(&w, 5, "mac add BRIDGE MAC PORT")?;
            Ok(Request::MacAdd {
                bridge: w[2].into(),
                mac: w[3].into(),
                port: w[4].into(),
            })
        }
        ("mac", "del" | "delete") => {
            arity(&w, 4, "mac del BRIDGE MAC")?;
            Ok(Request::MacDelete {
                bridge: w[2].into(),
                mac: w[3].into(),
            })
        }
        ("mac", "flush") => match w.len() {
            3 => Ok(Request::MacFlush {
                bridge: w[2].into(),
                port: None,
            }),
            4 => Ok(Request::MacFlush {
                bridge: w[2].into(),
                port: Some(w[3].into()),
            }),
            _ => Err(usage_error(&w[..2], "mac flush BRIDGE [PORT]")),
        },
        ("reload", "--dry-run") => match w.len() {
            2 => Ok(Request::ReloadPlan { path: None }),
            3 => Ok(Request::ReloadPlan {
                path: Some(absolute(w[2], cwd)),
            }),
            _ => Err(usage_error(&w[..2], "reload --dry-run [FILE]")),
        },
        ("reload", _) => match w.len() {
            1 => Ok(Request::Reload { path: None }),
            2 => Ok(Request::Reload {
                path: Some(absolute(w[1], cwd)),
            }),
            _ => Err(usage_error(&w[..1], "reload [FILE]")),
        },
        ("save", _) => match w.len() {
            1 => Ok(Request::Save { path: None }),
            2 => Ok(Request::Save {
                path: Some(absolute(w[1], cwd)),
            }),
            _ => Err(usage_error(&w[..1], "save [FILE]")),
        },
        _ => match crate::sections::match_verb(&w) {
            Some((v, n)) => Ok(Request::Edit {
                verb: v.info.name().to_string(),
                args: w[n..].iter().map(|s| s.to_string()).collect(),
            }),
            None => Err(CommandError::Unknown(w.join(" "))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MemifMode, MemifRole};

    fn p(s: &str) -> Result<Request, String> {
        let words: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_words(&words, Path::new("/home/u")).map_err(|e| e.to_string())
    }

    #[test]
    fn show_commands_and_aliases() {
        assert_eq!(
            p("show runtime").unwrap(),
            Request::Show {
                what: "runtime".into(),
                args: vec![]
            }
        );
        assert_eq!(
            p("show port").unwrap(),
            Request::Show {
                what: "ports".into(),
                args: vec![]
            }
        );
        // `show interface(s)` is the interface layer's registered show now.
        for w in ["show interfaces", "show interface", "show int"] {
            assert_eq!(
                p(w).unwrap(),
                Request::Show {
                    what: "interfaces".into(),
                    args: vec![]
                }
            );
        }
        // A feature's registered ctl command becomes an edit request with its words.
        assert_eq!(
            p("mtu p0 1500 check").unwrap(),
            Request::Edit {
                verb: "mtu".into(),
                args: vec!["p0".into(), "1500".into(), "check".into()]
            }
        );
        // A multi-word verb and its alias: the canonical name and the words after it.
        assert_eq!(
            p("sub-interface add uni0 20 dot1q 20").unwrap(),
            Request::Edit {
                verb: "subinterface add".into(),
                args: vec!["uni0".into(), "20".into(), "dot1q".into(), "20".into()]
            }
        );
        assert_eq!(
            p("bond member del lag0 p1").unwrap(),
            Request::Edit {
                verb: "bond member del".into(),
                args: vec!["lag0".into(), "p1".into()]
            }
        );
        assert_eq!(
            p("show mac br0").unwrap(),
            Request::Show {
                what: "mac".into(),
                args: vec!["br0".into()]
            }
        );
        assert_eq!(
            p("show bridge-domain").unwrap(),
            Request::Show {
                what: "bridge".into(),
                args: vec![]
            }
        );
        let e = p("show ports extra").unwrap_err();
        assert!(e.contains("takes no argument"), "{e}");
        assert!(p("show mac br0 0 10 extra")
            .unwrap_err()
            .contains("at most [BRIDGE] [OFFSET] [LIMIT]"));
        // No word or an unknown one: the list of registered shows, with what each shows.
        for line in ["show nothing", "show"] {
            let e = p(line).unwrap_err();
            assert!(e.contains("show runtime") && e.contains("show bond"), "{e}");
            assert!(e.contains("show mac [BRIDGE]"), "{e}");
        }
    }

    #[test]
    fn every_verb() {
        assert_eq!(p("clear counters").unwrap(), Request::ClearCounters {});
        assert_eq!(p("trace add 10").unwrap(), Request::TraceAdd { count: 10 });
        assert_eq!(p("trace clear").unwrap(), Request::TraceClear {});
        assert_eq!(
            p("capture p0 out.pcap 100").unwrap(),
            Request::Capture {
                port: "p0".into(),
                file: "out.pcap".into(),
                count: Some(100)
            }
        );
        assert_eq!(
            p("capture stop p0").unwrap(),
            Request::CaptureStop { port: "p0".into() }
        );
        assert_eq!(
            p("port del p0").unwrap(),
            Request::PortDelete { name: "p0".into() }
        );
        assert_eq!(
            p("port down p0").unwrap(),
            Request::PortState {
                name: "p0".into(),
                up: false
            }
        );
        assert_eq!(
            p("bridge del b").unwrap(),
            Request::BridgeDelete { name: "b".into() }
        );
        assert_eq!(
            p("bridge member add b p").unwrap(),
            Request::BridgeMemberAdd {
                bridge: "b".into(),
                port: "p".into()
            }
        );
        assert_eq!(
            p("bridge member del b p").unwrap(),
            Request::BridgeMemberRemove {
                bridge: "b".into(),
                port: "p".into()
            }
        );
        assert_eq!(
            p("xconnect add a b").unwrap(),
            Request::XconnectAdd {
                from: "a".into(),
                to: "b".into(),
                both: false
            }
        );
        assert_eq!(
            p("xconnect add a b --both").unwrap(),
            Request::XconnectAdd {
                from: "a".into(),
                to: "b".into(),
                both: true
            }
        );
        assert_eq!(
            p("xconnect del a").unwrap(),
            Request::XconnectDelete { from: "a".into() }
        );
        assert_eq!(
            p("mac add b 02:00:00:00:00:01 p").unwrap(),
            Request::MacAdd {
                bridge: "b".into(),
                mac: "02:00:00:00:00:01".into(),
                port: "p".into()
            }
        );
        assert_eq!(
            p("mac del b 02:00:00:00:00:01").unwrap(),
            Request::MacDelete {
                bridge: "b".into(),
                mac: "02:00:00:00:00:01".into()
            }
        );
        assert_eq!(
            p("mac flush b").unwrap(),
            Request::MacFlush {
                bridge: "b".into(),
                port: None
            }
        );
        assert_eq!(
            p("mac flush b p").unwrap(),
            Request::MacFlush {
                bridge: "b".into(),
                port: Some("p".into())
            }
        );
        assert_eq!(p("reload").unwrap(), Request::Reload { path: None });
        assert_eq!(
            p("reload --dry-run").unwrap(),
            Request::ReloadPlan { path: None }
        );
        assert_eq!(
            p("reload --dry-run a.toml").unwrap(),
            Request::ReloadPlan {
                path: Some("/home/u/a.toml".into())
            }
        );
        assert_eq!(
            p("reload /etc/v.toml").unwrap(),
            Request::Reload {
                path: Some("/etc/v.toml".into())
            }
        );
        assert_eq!(
            p("reload v.toml").unwrap(),
            Request::Reload {
                path: Some("/home/u/v.toml".into())
            }
        );
    }

    #[test]
    fn bridge_add_options() {
        let Request::BridgeAdd { bridge } =
            p("bridge add br1 --no-learn --no-uu-flood --mac-age 60 --mac-limit 10").unwrap()
        else {
            panic!()
        };
        assert_eq!(bridge.name, "br1");
        assert!(!bridge.learn && !bridge.uu_flood && bridge.flood && bridge.forward);
        assert_eq!((bridge.mac_age, bridge.mac_limit), (60, 10));
        assert!(p("bridge add br1 --mac-age soon")
            .unwrap_err()
            .contains("--mac-age = \"soon\""));
        assert!(p("bridge add br1 --colour")
            .unwrap_err()
            .contains("--colour"));
        assert!(p("bridge add br1 --mac-limit")
            .unwrap_err()
            .contains("needs a value"));
    }

    #[test]
    fn port_add_key_values() {
        let Request::PortAdd { port } =
            p("port add p2 memif socket=/run/m.sock id=2 role=client mode=interrupt").unwrap()
        else {
            panic!()
        };
        match port {
            PortConfig::Memif(m) => {
                assert_eq!(
                    (m.name.as_str(), m.socket.as_str(), m.id),
                    ("p2", "/run/m.sock", 2)
                );
                assert_eq!((m.role, m.mode), (MemifRole::Client, MemifMode::Interrupt));
            }
            other => panic!("{other:?}"),
        }
        let Request::PortAdd { port } =
            p("port add v1 af_packet interface=veth1 promiscuous=false").unwrap()
        else {
            panic!()
        };
        assert_eq!(port.type_name(), "af_packet");
        assert!(p("port add v1 af_packet interface=veth1 colour=red")
            .unwrap_err()
            .contains("colour"));
        assert!(p("port add v1 tap").unwrap_err().contains("tap"));
        assert!(p("port add v1 memif socket")
            .unwrap_err()
            .contains("KEY=VALUE"));
        assert!(p("port add v1").unwrap_err().contains("NAME TYPE"));
    }

    #[test]
    fn wrong_arity_and_unknown() {
        assert!(p("trace add").unwrap_err().contains("trace add N"));
        assert!(p("trace add x").unwrap_err().contains("N = \"x\""));
        assert!(p("mac add b 02:00:00:00:00:01")
            .unwrap_err()
            .contains("mac add BRIDGE MAC PORT"));
        assert!(p("frobnicate")
            .unwrap_err()
            .contains("unknown command `frobnicate`"));
        assert!(p("").unwrap_err().contains("unknown command"));
    }
}
