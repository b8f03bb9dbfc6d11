//! The L2 feature's control surface, registered from here (see [`crate::ctl`]) like every other
//! feature's: the `[[xconnect]]` section ([`XCONNECTS`]: `xconnect add|del`), the `[[bridge]]`
//! section ([`BRIDGES`]: `bridge add|del`, `bridge member add|del`, `mac add|del`), and the action
//! `mac flush` ([`ACTIONS`]), which forgets learned MACs without changing the config; and
//! `show bridge`, `show mac`, `show xconnect` ([`SHOWS`]) with their tables.
//!
//! A verb edits a copy of its section; the control plane then validates the whole config (a
//! member or cross-connected port that is no interface, or that another service has, is refused
//! there, naming the field, the value and the interfaces there are), diffs and applies it. What a
//! verb checks itself is what only its words can get wrong: a bridge, member, static MAC or
//! cross-connect the running config does not have.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vecswitch_wire::EthernetAddress;

use super::config::{
    bridge_objects, validate_bridges, validate_xconnects, xconnect_objects, BridgeConfig,
    StaticMacConfig, XconnectConfig,
};
use super::control::{MacTableInfo, MAC_DEFAULT_LIMIT};
use crate::ctl::table::on_off;
use crate::ctl::{
    json, page_args, typed, Action, Align, Section, Show, ShowError, Table, Verb, VerbError,
};
use crate::error::SwitchError;
use crate::object::{list_names, EditError};
use crate::runtime::Switch;
use crate::{BridgeInfo, ServiceInfo};

use Align::{Left as L, Right as R};

/// One line of `show xconnect`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct XconnectInfo {
    pub from: String,
    pub to: String,
}

impl Switch {
    /// `show xconnect`: every directed cross-connect.
    pub fn show_xconnects(&self) -> Vec<XconnectInfo> {
        self.show_ports()
            .into_iter()
            .filter_map(|p| match p.service {
                ServiceInfo::Xconnect { to } => Some(XconnectInfo { from: p.name, to }),
                _ => None,
            })
            .collect()
    }
}

/// `show bridge [BRIDGE]`: every bridge-domain, or the one named.
fn show_bridges(sw: &Switch, args: &[String]) -> Result<Value, ShowError> {
    let mut b = sw.show_bridges();
    if let Some(name) = args.first() {
        let known: Vec<String> = b.iter().map(|b| b.name.clone()).collect();
        b.retain(|x| &x.name == name);
        if b.is_empty() {
            return Err(SwitchError::NoBridge {
                name: name.clone(),
                known: crate::error::list(&known),
            }
            .into());
        }
    }
    json("bridge", b)
}

/// `show mac [BRIDGE] [OFFSET] [LIMIT]`: a first word that is a bridge's name, or not a number,
/// names the bridge.
fn show_mac(sw: &Switch, args: &[String]) -> Result<Value, ShowError> {
    let (bridge, rest) = match args.first() {
        Some(w) if w.parse::<usize>().is_err() || sw.state.bridge_index(w).is_some() => {
            (Some(w.as_str()), &args[1..])
        }
        _ => (None, args),
    };
    let (offset, limit) = page_args(rest, MAC_DEFAULT_LIMIT)?;
    json("mac", sw.show_mac_page(bridge, offset, limit)?)
}

/// `show bridge`, `show mac`, `show xconnect`.
pub const SHOWS: &[Show] = &[
    Show {
        word: "bridge",
        aliases: &["bridges", "bridge-domain"],
        args: &["BRIDGE"],
        help: "bridge-domains: settings, learned and static MACs, members",
        run: show_bridges,
        render: |v| typed::<Vec<BridgeInfo>>(v).map(|b| bridges(&b)),
    },
    Show {
        word: "mac",
        aliases: &["macs", "l2fib"],
        args: &["BRIDGE", "OFFSET", "LIMIT"],
        help: "MAC table: entries (learned, static), then one page (default 1000, at most 10000) of bridge, MAC, port, static or learned, age",
        run: show_mac,
        render: |v| typed::<MacTableInfo>(v).map(|m| macs(&m)),
    },
    Show {
        word: "xconnect",
        aliases: &["xconnects"],
        args: &[],
        help: "cross-connects, one line per direction",
        run: |sw, _| json("xconnect", sw.show_xconnects()),
        render: |v| typed::<Vec<XconnectInfo>>(v).map(|x| xconnects(&x)),
    },
];

fn bridges(bs: &[BridgeInfo]) -> String {
    let mut t = Table::new(&[
        ("Name", L),
        ("Idx", R),
        ("Learn", L),
        ("Fwd", L),
        ("Flood", L),
        ("UU-Flood", L),
        ("MAC age", R),
        ("MAC limit", R),
        ("Learned", R),
        ("Static", R),
        ("Members", L),
    ]);
    for b in bs {
        let s = &b.settings;
        t.row(vec![
            b.name.clone(),
            b.index.to_string(),
            on_off(s.learn),
            on_off(s.forward),
            on_off(s.flood),
            on_off(s.uu_flood),
            match s.mac_age_s {
                0 => "off".into(),
                a => format!("{a}s"),
            },
            s.mac_limit.to_string(),
            b.learned.to_string(),
            b.statics.to_string(),
            if b.members.is_empty() {
                "-".into()
            } else {
                b.members.join(",")
            },
        ]);
    }
    t.render()
}

fn macs(m: &MacTableInfo) -> String {
    let of = m
        .bridge
        .as_ref()
        .map_or_else(|| "every bridge".to_string(), |b| format!("bridge {b}"));
    let head = format!(
        "{} MACs in {of} ({} learned, {} static; {} in the table), showing {} from {}\n",
        m.matched,
        m.learned,
        m.statics,
        m.total,
        m.entries.len(),
        m.offset
    );
    let mut t = Table::new(&[
        ("Bridge", L),
        ("MAC", L),
        ("Port", L),
        ("Type", L),
        ("Age(s)", R),
    ]);
    for e in &m.entries {
        t.row(vec![
            e.bridge.clone(),
            e.mac.clone(),
            e.port.clone(),
            if e.is_static { "static" } else { "dynamic" }.into(),
            if e.is_static {
                "-".into()
            } else {
                e.age_s.to_string()
            },
        ]);
    }
    head + &t.render()
}

fn xconnects(xs: &[XconnectInfo]) -> String {
    let mut t = Table::new(&[("From", L), ("To", L)]);
    for x in xs {
        t.row(vec![x.from.clone(), x.to.clone()]);
    }
    t.render()
}

/// What `mac flush` answers: how many learned entries it forgot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flushed {
    pub flushed: usize,
}

/// `[[xconnect]]` and its `ctl` verbs.
pub const XCONNECTS: Section<Vec<XconnectConfig>, VerbError> = Section {
    key: "xconnect",
    validate: |x, v| validate_xconnects(x, v),
    objects: |x, o| xconnect_objects(x, o),
    verbs: &[
        Verb {
            names: &["xconnect add"],
            usage: "FROM TO [--both]",
            help: "cross-connects FROM -> TO (and TO -> FROM with --both)",
            apply: xconnect_add,
        },
        Verb {
            names: &["xconnect del", "xconnect delete"],
            usage: "FROM",
            help:
                "removes the cross-connect whose receive side is FROM (the other direction stays)",
            apply: xconnect_del,
        },
    ],
};

/// `[[bridge]]` (with its members and static MACs) and its `ctl` verbs.
pub const BRIDGES: Section<Vec<BridgeConfig>, VerbError> = Section {
    key: "bridge",
    validate: |b, v| validate_bridges(b, v),
    objects: |b, o| bridge_objects(b, o),
    verbs: &[
        Verb {
            names: &["bridge add"],
            usage: "NAME [--no-learn] [--no-forward] [--no-flood] [--no-uu-flood] [--mac-age S] [--mac-limit N] [--port PORT]... [--static-mac MAC PORT]...",
            help: "adds bridge-domain NAME (with members and static MACs, if given)",
            apply: bridge_add,
        },
        Verb {
            names: &["bridge del", "bridge delete"],
            usage: "NAME",
            help: "deletes bridge-domain NAME with its members and static MACs (the ports stay)",
            apply: bridge_del,
        },
        Verb {
            names: &["bridge member add"],
            usage: "BRIDGE PORT",
            help: "adds interface PORT to bridge-domain BRIDGE",
            apply: |b, w| member_add(b, w),
        },
        Verb {
            names: &[
                "bridge member del",
                "bridge member delete",
                "bridge member remove",
            ],
            usage: "BRIDGE PORT",
            help: "takes PORT out of bridge-domain BRIDGE (its static MACs go with it)",
            apply: |b, w| member_del(b, w),
        },
        Verb {
            names: &["mac add"],
            usage: "BRIDGE MAC PORT",
            help: "adds a static MAC behind member PORT of BRIDGE",
            apply: |b, w| mac_add(b, w),
        },
        Verb {
            names: &["mac del", "mac delete"],
            usage: "BRIDGE MAC",
            help: "removes a static MAC of BRIDGE",
            apply: |b, w| mac_del(b, w),
        },
    ],
};

/// `mac flush BRIDGE [PORT]`.
pub const ACTIONS: &[Action] = &[Action {
    names: &["mac flush"],
    usage: "BRIDGE [PORT]",
    help: "forgets the learned (not static) MACs of BRIDGE, or only those behind PORT",
    run: |sw, w| {
        let (bridge, port) = match w {
            [b] => (b, None),
            [b, p] => (b, Some(p.as_str())),
            _ => {
                return Err(crate::SwitchError::InvalidValue {
                    field: "arguments",
                    value: w.join(" "),
                    accepted: "mac flush BRIDGE [PORT]",
                }
                .into())
            }
        };
        let flushed = sw.flush_mac(bridge, port)?;
        json("mac flush", Flushed { flushed })
    },
    render: |v| typed::<Flushed>(v).map(|f| format!("{} learned entries flushed\n", f.flushed)),
}];

/// The words of a verb that takes exactly `N` arguments (`usage` is its whole command line).
fn exactly<'a, const N: usize>(
    w: &'a [String],
    usage: &'static str,
) -> Result<&'a [String; N], EditError> {
    w.try_into().map_err(|_| EditError {
        field: "arguments",
        value: w.join(" "),
        accepted: usage,
    })
}

/// The bridge named `name`, or why not (naming the bridges there are).
fn bridge<'a>(bs: &'a mut [BridgeConfig], name: &str) -> Result<&'a mut BridgeConfig, VerbError> {
    let known = list_names(&bs.iter().map(|b| b.name.as_str()).collect::<Vec<_>>());
    bs.iter_mut()
        .find(|b| b.name == name)
        .ok_or_else(|| VerbError::Value {
            field: "bridge",
            value: name.to_string(),
            accepted: format!("the name of a bridge-domain; bridges are: {known}"),
        })
}

/// A MAC address from a word.
fn mac(w: &str) -> Result<EthernetAddress, EditError> {
    w.parse().map_err(|_| EditError {
        field: "mac",
        value: w.to_string(),
        accepted: "a MAC address like 02:00:00:00:00:01",
    })
}

/// A number after an option.
fn number<T: std::str::FromStr>(
    opt: &'static str,
    v: Option<&String>,
    accepted: &'static str,
) -> Result<T, EditError> {
    let v = v.ok_or(EditError {
        field: opt,
        value: String::new(),
        accepted: "needs a value",
    })?;
    v.parse().map_err(|_| EditError {
        field: opt,
        value: v.clone(),
        accepted,
    })
}

/// `bridge add NAME [options]`.
fn bridge_add(bs: &mut Vec<BridgeConfig>, w: &[String]) -> Result<(), VerbError> {
    let Some((name, opts)) = w.split_first() else {
        return Err(EditError {
            field: "NAME",
            value: String::new(),
            accepted: "bridge add NAME [options]",
        }
        .into());
    };
    let mut b = BridgeConfig::new(name);
    let mut i = 0;
    while i < opts.len() {
        let arg = |k: usize| opts.get(i + k);
        match opts[i].as_str() {
            "--no-learn" => b.learn = false,
            "--no-forward" => b.forward = false,
            "--no-flood" => b.flood = false,
            "--no-uu-flood" => b.uu_flood = false,
            "--mac-age" => {
                b.mac_age = number(
                    "--mac-age",
                    arg(1),
                    "seconds, 0..=4294967295 (0 = never age)",
                )?;
                i += 1;
            }
            "--mac-limit" => {
                b.mac_limit = number("--mac-limit", arg(1), "a number of entries")?;
                i += 1;
            }
            "--port" => {
                let p = arg(1).ok_or(EditError {
                    field: "--port",
                    value: String::new(),
                    accepted: "needs a value: an interface name",
                })?;
                b.ports.push(p.clone());
                i += 1;
            }
            "--static-mac" => {
                let (Some(m), Some(p)) = (arg(1), arg(2)) else {
                    return Err(EditError {
                        field: "--static-mac",
                        value: opts[i + 1..].join(" "),
                        accepted: "needs two values: MAC PORT",
                    }
                    .into());
                };
                b.static_mac.push(StaticMacConfig {
                    mac: mac(m)?,
                    port: p.clone(),
                });
                i += 2;
            }
            other => {
                return Err(EditError {
                    field: "option",
                    value: other.to_string(),
                    accepted: "one of --no-learn, --no-forward, --no-flood, --no-uu-flood, --mac-age S, --mac-limit N, --port PORT, --static-mac MAC PORT",
                }
                .into())
            }
        }
        i += 1;
    }
    bs.push(b);
    Ok(())
}

/// `bridge del NAME`.
fn bridge_del(bs: &mut Vec<BridgeConfig>, w: &[String]) -> Result<(), VerbError> {
    let [name] = exactly(w, "bridge del NAME")?;
    let b = bridge(bs, name)?.name.clone();
    bs.retain(|x| x.name != b);
    Ok(())
}

/// `bridge member add BRIDGE PORT` (the whole-config validation checks the port).
fn member_add(bs: &mut [BridgeConfig], w: &[String]) -> Result<(), VerbError> {
    let [b, port] = exactly(w, "bridge member add BRIDGE PORT")?;
    bridge(bs, b)?.ports.push(port.clone());
    Ok(())
}

/// `bridge member del BRIDGE PORT`: its static MACs go with it.
fn member_del(bs: &mut [BridgeConfig], w: &[String]) -> Result<(), VerbError> {
    let [b, port] = exactly(w, "bridge member del BRIDGE PORT")?;
    let br = bridge(bs, b)?;
    if !br.ports.contains(port) {
        return Err(VerbError::Value {
            field: "port",
            value: port.clone(),
            accepted: format!(
                "a member of bridge {:?}; its members are: {}",
                br.name,
                list_names(&br.ports)
            ),
        });
    }
    br.ports.retain(|p| p != port);
    br.static_mac.retain(|s| s.port != *port);
    Ok(())
}

/// `mac add BRIDGE MAC PORT` (the whole-config validation checks the MAC and the member).
fn mac_add(bs: &mut [BridgeConfig], w: &[String]) -> Result<(), VerbError> {
    let [b, m, port] = exactly(w, "mac add BRIDGE MAC PORT")?;
    let m = mac(m)?;
    bridge(bs, b)?.static_mac.push(StaticMacConfig {
        mac: m,
        port: port.clone(),
    });
    Ok(())
}

/// `mac del BRIDGE MAC`.
fn mac_del(bs: &mut [BridgeConfig], w: &[String]) -> Result<(), VerbError> {
    let [b, m] = exactly(w, "mac del BRIDGE MAC")?;
    let parsed = mac(m)?;
    let br = bridge(bs, b)?;
    let before = br.static_mac.len();
    br.static_mac.retain(|s| s.mac != parsed);
    if br.static_mac.len() == before {
        return Err(VerbError::Value {
            field: "mac",
            value: m.clone(),
            accepted: format!("a static MAC of bridge {:?}", br.name),
        });
    }
    Ok(())
}

/// `xconnect add FROM TO [--both]` (the whole-config validation checks the ports).
fn xconnect_add(xs: &mut Vec<XconnectConfig>, w: &[String]) -> Result<(), VerbError> {
    let x = match w {
        [from, to] => XconnectConfig::one_way(from, to),
        [from, to, both] if both == "--both" => XconnectConfig::both(from, to),
        _ => {
            return Err(EditError {
                field: "arguments",
                value: w.join(" "),
                accepted: "xconnect add FROM TO [--both]",
            }
            .into())
        }
    };
    xs.push(x);
    Ok(())
}

/// `xconnect del FROM`: removes the direction that receives on FROM; the other direction of an
/// E-Line stays (offloaded if it was).
fn xconnect_del(xs: &mut Vec<XconnectConfig>, w: &[String]) -> Result<(), VerbError> {
    let [from] = exactly(w, "xconnect del FROM")?;
    let mut found = false;
    let mut out = Vec::new();
    for x in xs.drain(..) {
        let dirs = x.directions();
        if !dirs.iter().any(|(f, _)| f == from) {
            out.push(x);
            continue;
        }
        found = true;
        for (f, t) in dirs.into_iter().filter(|(f, _)| f != from) {
            out.push(XconnectConfig {
                offload: x.offload,
                ..XconnectConfig::one_way(&f, &t)
            });
        }
    }
    *xs = out;
    if found {
        Ok(())
    } else {
        Err(EditError {
            field: "from",
            value: from.clone(),
            accepted: "a port with a cross-connect",
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn verb<T>(
        s: &Section<T, VerbError>,
        name: &str,
    ) -> fn(&mut T, &[String]) -> Result<(), VerbError> {
        s.verbs
            .iter()
            .find(|v| v.names[0] == name)
            .unwrap_or_else(|| panic!("no verb {name}"))
            .apply
    }

    /// `bridge add` reads its options into the bridge's config; bad ones name the option, the
    /// value and what is accepted (moved from the command-line parser's tests).
    #[test]
    fn bridge_add_options() {
        let add = verb(&BRIDGES, "bridge add");
        let mut bs = Vec::new();
        add(
            &mut bs,
            &words("br1 --no-learn --no-uu-flood --mac-age 60 --mac-limit 10"),
        )
        .unwrap();
        let bridge = &bs[0];
        assert_eq!(bridge.name, "br1");
        assert!(!bridge.learn && !bridge.uu_flood && bridge.flood && bridge.forward);
        assert_eq!((bridge.mac_age, bridge.mac_limit), (60, 10));
        let e = |s: &str| add(&mut Vec::new(), &words(s)).unwrap_err().to_string();
        assert!(e("br1 --mac-age soon").contains("--mac-age = \"soon\""));
        assert!(e("br1 --colour").contains("--colour"));
        assert!(e("br1 --mac-limit").contains("needs a value"));
        assert!(e("").contains("bridge add NAME"));
        // Members and static MACs, as a `bridge_add` request's `bridge` table may have them.
        let mut bs = Vec::new();
        add(
            &mut bs,
            &words("br2 --port p0 --port p1 --static-mac 02:00:00:00:00:01 p1"),
        )
        .unwrap();
        assert_eq!(bs[0].ports, ["p0", "p1"]);
        assert_eq!(bs[0].static_mac[0].port, "p1");
        assert!(e("br2 --static-mac 02:00:00:00:00:01").contains("MAC PORT"));
    }

    #[test]
    fn names_the_running_config_has() {
        let mut bs = vec![BridgeConfig::new("br0")];
        let e = verb(&BRIDGES, "bridge member add")(&mut bs, &words("nope v0"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "bridge = \"nope\": the name of a bridge-domain; bridges are: br0"
        );
        let e = verb(&BRIDGES, "bridge member del")(&mut bs, &words("br0 v0"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a member of bridge \"br0\"; its members are: (none)"),
            "{e}"
        );
        let e = verb(&BRIDGES, "mac del")(&mut bs, &words("br0 02:00:00:00:00:07"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a static MAC of bridge \"br0\""), "{e}");
        let e = verb(&BRIDGES, "mac add")(&mut bs, &words("br0 zz p0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mac = \"zz\""), "{e}");
        // Wrong number of words: the command's usage (moved from the parser's tests).
        let e = verb(&BRIDGES, "mac add")(&mut bs, &words("b 02:00:00:00:00:01"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mac add BRIDGE MAC PORT"), "{e}");
        assert_eq!(
            bs,
            vec![BridgeConfig::new("br0")],
            "refused edits changed nothing"
        );
    }

    #[test]
    fn xconnect_add_and_del() {
        let mut xs = Vec::new();
        verb(&XCONNECTS, "xconnect add")(&mut xs, &words("a b")).unwrap();
        assert_eq!(xs, vec![XconnectConfig::one_way("a", "b")]);
        verb(&XCONNECTS, "xconnect add")(&mut xs, &words("c d --both")).unwrap();
        assert_eq!(xs[1], XconnectConfig::both("c", "d"));
        assert!(verb(&XCONNECTS, "xconnect add")(&mut xs, &words("c d --bath")).is_err());
        verb(&XCONNECTS, "xconnect del")(&mut xs, &words("c")).unwrap();
        assert_eq!(xs[1], XconnectConfig::one_way("d", "c"));
        let e = verb(&XCONNECTS, "xconnect del")(&mut xs, &words("c"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("from = \"c\""), "{e}");
    }
}
