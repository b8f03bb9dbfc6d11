//! The words of `vecswitch ctl <command...>` (vppctl-like) turned into a [`Request`]:
//! [`parse_words`]. Relative file paths (`reload FILE`, `capture PORT FILE`) are made absolute
//! against the caller's directory, since the switch runs elsewhere.
//!
//! ```text
//! show WHAT [ARGS]       (every registered show: `ctl show` lists them)
//! clear counters
//! trace add N | trace clear
//! capture PORT FILE [COUNT] | capture stop PORT
//! reload [--dry-run] [FILE]
//! save [FILE]
//! VERB [ARGS]            (every verb a section registers: `port add ...`, `bridge member add ...`,
//!                         `mac add ...`, `subinterface add ...`, `bond add ...`, `mtu IFACE BYTES`;
//!                         listed by `ctl` with no command)
//! ACTION [ARGS]          (every action a feature registers: `mac flush BRIDGE [PORT]`)
//! ```
//!
//! The shows, verbs and actions are looked up in the registration lists
//! ([`crate::sections::find_show`], [`crate::sections::match_verb`],
//! [`crate::sections::match_action`]); help is generated from them.

use crate::protocol::Request;
use std::path::Path;

/// The usage text printed with a command error.
pub const USAGE: &str = "commands:
  show WHAT [ARGS]                     (see the list of shows below)
  clear counters
  trace add N | trace clear
  capture PORT FILE [COUNT] | capture stop PORT
  reload [--dry-run] [FILE]
  save [FILE]                          (the running config as TOML; default: the file the switch runs from)";

/// [`USAGE`] with every registered verb, action and show ([`crate::sections`]).
pub fn usage() -> String {
    let mut u = USAGE.to_string();
    u.push_str("\nverbs registered by the config sections (ports and features):");
    let actions = vecswitch_switch::ctl::actions().map(|a| a.info());
    for v in crate::sections::verbs().map(|v| v.info).chain(actions) {
        u.push_str(&format!("\n  {} {}   ({})", v.name(), v.usage, v.help));
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
        _ => {
            let rest = |n: usize| w[n..].iter().map(|s| s.to_string()).collect();
            let verb = crate::sections::match_verb(&w);
            let action = crate::sections::match_action(&w);
            match (verb, action) {
                (Some((v, n)), a) if a.is_none_or(|(_, m)| n >= m) => Ok(Request::Edit {
                    verb: v.info.name().to_string(),
                    args: rest(n),
                }),
                (_, Some((a, n))) => Ok(Request::Action {
                    action: a.info().name().to_string(),
                    args: rest(n),
                }),
                _ => Err(CommandError::Unknown(w.join(" "))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // The port and L2 commands are the verbs their sections register (and `mac flush` the
        // L2 feature's action): the canonical name and the words after it.
        let edit = |verb: &str, args: &[&str]| Request::Edit {
            verb: verb.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        };
        for (line, want) in [
            ("port del p0", edit("port del", &["p0"])),
            ("port delete p0", edit("port del", &["p0"])),
            ("port down p0", edit("port down", &["p0"])),
            ("port up p0", edit("port up", &["p0"])),
            ("bridge del b", edit("bridge del", &["b"])),
            (
                "bridge member add b p",
                edit("bridge member add", &["b", "p"]),
            ),
            (
                "bridge member del b p",
                edit("bridge member del", &["b", "p"]),
            ),
            (
                "bridge member remove b p",
                edit("bridge member del", &["b", "p"]),
            ),
            ("xconnect add a b", edit("xconnect add", &["a", "b"])),
            (
                "xconnect add a b --both",
                edit("xconnect add", &["a", "b", "--both"]),
            ),
            ("xconnect del a", edit("xconnect del", &["a"])),
            (
                "mac add b 02:00:00:00:00:01 p",
                edit("mac add", &["b", "02:00:00:00:00:01", "p"]),
            ),
            (
                "mac del b 02:00:00:00:00:01",
                edit("mac del", &["b", "02:00:00:00:00:01"]),
            ),
            (
                "port add p2 memif socket=/run/m.sock id=2",
                edit("port add", &["p2", "memif", "socket=/run/m.sock", "id=2"]),
            ),
            (
                "bridge add br1 --no-learn",
                edit("bridge add", &["br1", "--no-learn"]),
            ),
        ] {
            assert_eq!(p(line).unwrap(), want, "{line}");
        }
        assert_eq!(
            p("mac flush b").unwrap(),
            Request::Action {
                action: "mac flush".into(),
                args: vec!["b".into()]
            }
        );
        assert_eq!(
            p("mac flush b p").unwrap(),
            Request::Action {
                action: "mac flush".into(),
                args: vec!["b".into(), "p".into()]
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

    // `bridge add`'s options and `port add`'s KEY=VALUE pairs are read by their verbs now: their
    // tests moved with them (vecswitch_switch::l2::ctl, crate::ports_ctl).

    #[test]
    fn wrong_arity_and_unknown() {
        assert!(p("trace add").unwrap_err().contains("trace add N"));
        assert!(p("trace add x").unwrap_err().contains("N = \"x\""));
        // (`mac add`'s arity is checked by the verb: vecswitch_switch::l2::ctl's tests.)
        assert!(p("frobnicate")
            .unwrap_err()
            .contains("unknown command `frobnicate`"));
        assert!(p("").unwrap_err().contains("unknown command"));
    }
}
