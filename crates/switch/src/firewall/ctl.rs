//! The firewall's control surface, registered from here (see [`crate::ctl`]): `show firewall`
//! ([`SHOWS`]) and the `[[firewall]]` section ([`SECTION`]) with its verbs:
//!
//! ```text
//! firewall default IFACE deny|permit|permit-reflect      # makes the ACL if there is none
//! firewall rule add IFACE [at INDEX] [src P] [dst P] [proto X] [sport R] [dport R] [icmp-type T] ACTION
//! firewall rule del IFACE INDEX
//! firewall ips IFACE off | [nocase] PATTERN...            # IPS mode (hex:… for bytes)
//! firewall del IFACE
//! ```
//!
//! Each edits a copy of the running section, which is then validated whole and applied all or
//! nothing by the control plane (a rejected edit leaves the switch as it was).

use super::acl::{Action, Rule};
use super::config::{objects, validate, FirewallConfig};
use super::control::FirewallInfo;
use super::ips::IpsConfig;
use crate::ctl::{json, typed, Align, Section, Show, Table, Verb};
use crate::object::EditError;

/// `[[firewall]]` and its `ctl` verbs.
pub const SECTION: Section<Vec<FirewallConfig>> = Section {
    key: "firewall",
    validate: |s, v| validate(s, v),
    objects: |s, o| objects(s, o),
    verbs: &[
        Verb {
            names: &["firewall default"],
            usage: "IFACE deny|permit|permit-reflect",
            help: "sets the default action of IFACE's ACL (making an empty ACL if it has none)",
            apply: default_action,
        },
        Verb {
            names: &["firewall rule add"],
            usage: "IFACE [at INDEX] [src PREFIX] [dst PREFIX] [proto tcp|udp|icmp|icmpv6|N] [sport PORTS] [dport PORTS] [icmp-type T] deny|permit|permit-reflect",
            help: "adds a rule to IFACE's ACL, at INDEX (default: the end)",
            apply: rule_add,
        },
        Verb {
            names: &["firewall rule del", "firewall rule delete"],
            usage: "IFACE INDEX",
            help: "deletes rule INDEX of IFACE's ACL (the later rules move up)",
            apply: rule_del,
        },
        Verb {
            names: &["firewall ips"],
            usage: "IFACE off | [nocase] PATTERN...",
            help: "IPS mode on IFACE: drops what the ACL lets through when its payload holds a pattern (hex:4d5a90 for bytes); off: none",
            apply: ips,
        },
        Verb {
            names: &["firewall del", "firewall delete"],
            usage: "IFACE",
            help: "removes IFACE's ACL (and its IPS)",
            apply: del,
        },
    ],
};

fn parse_action(w: &str) -> Option<Action> {
    match w {
        "deny" => Some(Action::Deny),
        "permit" => Some(Action::Permit),
        "permit-reflect" => Some(Action::PermitReflect),
        _ => None,
    }
}

/// The ACL of `iface` in the section.
fn find<'a>(
    fw: &'a mut [FirewallConfig],
    iface: &str,
) -> Result<&'a mut FirewallConfig, EditError> {
    fw.iter_mut()
        .find(|f| f.interface == iface)
        .ok_or_else(|| EditError {
            field: "IFACE",
            value: iface.to_string(),
            accepted: "an interface with an ACL in the running config (`firewall default IFACE ACTION` makes one)",
        })
}

fn default_action(fw: &mut Vec<FirewallConfig>, w: &[String]) -> Result<(), EditError> {
    let bad = || EditError {
        field: "IFACE ACTION",
        value: w.join(" "),
        accepted: "an interface and deny, permit or permit-reflect",
    };
    let [iface, a] = w else {
        return Err(bad());
    };
    let a = parse_action(a).ok_or_else(bad)?;
    match fw.iter_mut().find(|f| f.interface == *iface) {
        Some(f) => f.default_action = a,
        None => fw.push(FirewallConfig {
            interface: iface.clone(),
            rules: Vec::new(),
            default_action: a,
            ips: None,
        }),
    }
    Ok(())
}

/// Reads a rule from `key value` pairs and one action word.
pub fn parse_rule(w: &[String]) -> Result<Rule, EditError> {
    let mut r = Rule::any(Action::Deny);
    let mut act = None;
    let mut i = 0;
    while i < w.len() {
        if let Some(a) = parse_action(&w[i]) {
            act = Some(a);
            i += 1;
            continue;
        }
        let Some(v) = w.get(i + 1) else {
            return Err(EditError {
                field: "rule",
                value: w[i].clone(),
                accepted: "a field and its value (src, dst, proto, sport, dport, icmp-type), or deny, permit, permit-reflect",
            });
        };
        let bad = |field: &'static str, accepted: &'static str| EditError {
            field,
            value: v.clone(),
            accepted,
        };
        match w[i].as_str() {
            "src" => {
                r.src = Some(
                    v.parse()
                        .map_err(|_| bad("src", "an IPv4 or IPv6 prefix"))?,
                )
            }
            "dst" => {
                r.dst = Some(
                    v.parse()
                        .map_err(|_| bad("dst", "an IPv4 or IPv6 prefix"))?,
                )
            }
            "proto" => {
                r.proto = Some(
                    v.parse()
                        .map_err(|_| bad("proto", "tcp, udp, icmp, icmpv6 or 0-255"))?,
                )
            }
            "sport" => r.sport = Some(v.parse().map_err(|_| bad("sport", "PORT or LOW-HIGH"))?),
            "dport" => r.dport = Some(v.parse().map_err(|_| bad("dport", "PORT or LOW-HIGH"))?),
            "icmp-type" => r.icmp_type = Some(v.parse().map_err(|_| bad("icmp-type", "0-255"))?),
            _ => {
                return Err(EditError {
                    field: "rule field",
                    value: w[i].clone(),
                    accepted:
                        "src, dst, proto, sport, dport, icmp-type, or deny, permit, permit-reflect",
                })
            }
        }
        i += 2;
    }
    r.action = act.ok_or_else(|| EditError {
        field: "ACTION",
        value: w.join(" "),
        accepted: "one of deny, permit, permit-reflect",
    })?;
    Ok(r)
}

// The signature of `Verb::apply` over the section's type (a Vec).
#[allow(clippy::ptr_arg)]
fn rule_add(fw: &mut Vec<FirewallConfig>, w: &[String]) -> Result<(), EditError> {
    let Some((iface, rest)) = w.split_first() else {
        return Err(EditError {
            field: "IFACE",
            value: String::new(),
            accepted: "an interface and a rule",
        });
    };
    let f = find(fw, iface)?;
    let (at, rest) = match rest {
        [k, n, rest @ ..] if k == "at" => {
            let n: usize = n
                .parse()
                .ok()
                .filter(|&n| n <= f.rules.len())
                .ok_or_else(|| EditError {
                    field: "INDEX",
                    value: n.clone(),
                    accepted: "a rule index from 0 to the number of rules",
                })?;
            (n, rest)
        }
        _ => (f.rules.len(), rest),
    };
    let r = parse_rule(rest)?;
    f.rules.insert(at, r);
    Ok(())
}

// The signature of `Verb::apply` over the section's type (a Vec).
#[allow(clippy::ptr_arg)]
fn rule_del(fw: &mut Vec<FirewallConfig>, w: &[String]) -> Result<(), EditError> {
    let [iface, n] = w else {
        return Err(EditError {
            field: "IFACE INDEX",
            value: w.join(" "),
            accepted: "an interface and a rule index",
        });
    };
    let f = find(fw, iface)?;
    let n: usize = n
        .parse()
        .ok()
        .filter(|&n| n < f.rules.len())
        .ok_or_else(|| EditError {
            field: "INDEX",
            value: n.clone(),
            accepted: "the index of one of the interface's rules (show firewall)",
        })?;
    f.rules.remove(n);
    Ok(())
}

// The signature of `Verb::apply` over the section's type (a Vec).
#[allow(clippy::ptr_arg)]
fn ips(fw: &mut Vec<FirewallConfig>, w: &[String]) -> Result<(), EditError> {
    let Some((iface, rest)) = w.split_first() else {
        return Err(EditError {
            field: "IFACE",
            value: String::new(),
            accepted: "an interface, then off or patterns",
        });
    };
    let f = find(fw, iface)?;
    f.ips = match rest {
        [off] if off == "off" => None,
        [] => {
            return Err(EditError {
                field: "PATTERN",
                value: String::new(),
                accepted: "off, or one or more patterns",
            })
        }
        _ => {
            let (nocase, p) = match rest.split_first() {
                Some((n, p)) if n == "nocase" => (true, p),
                _ => (false, rest),
            };
            Some(IpsConfig {
                patterns: p.to_vec(),
                case_insensitive: nocase,
            })
        }
    };
    Ok(())
}

fn del(fw: &mut Vec<FirewallConfig>, w: &[String]) -> Result<(), EditError> {
    let [iface] = w else {
        return Err(EditError {
            field: "IFACE",
            value: w.join(" "),
            accepted: "one interface",
        });
    };
    find(fw, iface)?;
    fw.retain(|f| f.interface != *iface);
    Ok(())
}

/// `show firewall`.
pub const SHOWS: &[Show] = &[Show {
    word: "firewall",
    aliases: &["acl"],
    args: &[],
    help: "firewall ACLs per interface with each rule's hits and the default's, and the tracked connections",
    run: |sw, _| json("firewall", sw.show_firewall()),
    render: |v| typed::<FirewallInfo>(v).map(|f| render(&f)),
}];

fn action(a: Action) -> &'static str {
    match a {
        Action::Deny => "deny",
        Action::Permit => "permit",
        Action::PermitReflect => "permit-reflect",
    }
}

fn render(f: &FirewallInfo) -> String {
    use Align::{Left as L, Right as R};
    let mut out = String::new();
    for a in &f.acls {
        let mut t = Table::new(&[
            ("#", R),
            ("Source", L),
            ("Destination", L),
            ("Proto", L),
            ("Sport", L),
            ("Dport", L),
            ("ICMP type", L),
            ("Action", L),
            ("Hits", R),
        ]);
        let opt = |s: Option<String>| s.unwrap_or_else(|| "any".into());
        for r in &a.rules {
            let x = &r.rule;
            t.row(vec![
                r.index.to_string(),
                opt(x.src.map(|p| p.to_string())),
                opt(x.dst.map(|p| p.to_string())),
                opt(x.proto.map(|p| p.to_string())),
                opt(x.sport.map(|p| p.to_string())),
                opt(x.dport.map(|p| p.to_string())),
                opt(x.icmp_type.map(|p| p.to_string())),
                action(x.action).into(),
                r.hits.to_string(),
            ]);
        }
        t.row(vec![
            "-".into(),
            "default".into(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            action(a.default_action).into(),
            a.default_hits.to_string(),
        ]);
        out += &format!("interface {}:\n{}", a.interface, t.render());
        if let Some(ips) = &a.ips {
            let mut t = Table::new(&[("#", R), ("IPS pattern", L), ("Drops", R)]);
            for (i, (p, hits)) in ips.patterns.iter().enumerate() {
                t.row(vec![i.to_string(), format!("{p:?}"), hits.to_string()]);
            }
            out += &format!(
                "IPS on {} ({} packets searched{}):\n{}",
                a.interface,
                ips.scanned,
                if ips.case_insensitive {
                    ", ASCII case ignored"
                } else {
                    ""
                },
                t.render()
            );
        }
    }
    out += &format!(
        "connections: {} tracked ({} reflected), {} created, {} expired\n",
        f.connections, f.reflected, f.connections_created, f.connections_expired
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::Validation;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(fw: &mut Vec<FirewallConfig>, verb: &str, args: &str) -> Result<(), EditError> {
        let v = SECTION
            .verbs
            .iter()
            .find(|v| v.names[0] == verb)
            .expect("a registered verb");
        (v.apply)(fw, &words(args))
    }

    #[test]
    fn the_verbs_edit_the_section() {
        let mut fw = Vec::new();
        run(&mut fw, "firewall default", "lan0 deny").unwrap();
        run(
            &mut fw,
            "firewall rule add",
            "lan0 proto tcp dport 80 permit-reflect",
        )
        .unwrap();
        run(
            &mut fw,
            "firewall rule add",
            "lan0 at 0 src 2001:db8::/32 proto icmpv6 icmp-type 128 permit",
        )
        .unwrap();
        run(&mut fw, "firewall ips", "lan0 nocase /etc/passwd hex:4d5a").unwrap();
        assert_eq!(fw.len(), 1);
        let f = &fw[0];
        assert_eq!(f.rules.len(), 2);
        assert_eq!(f.rules[0].src, Some("2001:db8::/32".parse().unwrap()));
        assert_eq!(f.rules[0].icmp_type, Some(128));
        assert_eq!(f.rules[1].action, Action::PermitReflect);
        assert_eq!(f.ips.as_ref().unwrap().patterns.len(), 2);
        assert!(f.ips.as_ref().unwrap().case_insensitive);
        let mut v = Validation::default();
        v.interfaces.insert("lan0".into());
        validate(&fw, &mut v);
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        run(&mut fw, "firewall rule del", "lan0 0").unwrap();
        assert_eq!(fw[0].rules.len(), 1);
        run(&mut fw, "firewall ips", "lan0 off").unwrap();
        assert!(fw[0].ips.is_none());
        run(&mut fw, "firewall del", "lan0").unwrap();
        assert!(fw.is_empty());
    }

    /// Words that do not read are refused naming the field; words that read into a rule the
    /// validation refuses (ports without tcp/udp, mixed families, a bad pattern) are refused by
    /// the whole-config validation the control plane runs before applying anything.
    #[test]
    fn bad_words_are_refused_with_the_field() {
        let mut fw = Vec::new();
        let e = run(&mut fw, "firewall rule add", "lan0 permit").unwrap_err();
        assert_eq!(e.field, "IFACE", "no ACL yet");
        run(&mut fw, "firewall default", "lan0 deny").unwrap();
        let before = fw.clone();
        for (args, field) in [
            ("lan0 proto tcp dport 99999 permit", "dport"),
            ("lan0 src 10.0.0.0/33 permit", "src"),
            ("lan0 proto gre permit", "proto"),
            ("lan0 colour blue permit", "rule field"),
            ("lan0 proto tcp", "ACTION"),
            ("lan0 at 5 permit", "INDEX"),
        ] {
            let e = run(&mut fw, "firewall rule add", args).unwrap_err();
            assert_eq!(e.field, field, "{args}: {e}");
        }
        assert_eq!(
            run(&mut fw, "firewall rule del", "lan0 0")
                .unwrap_err()
                .field,
            "INDEX"
        );
        assert_eq!(
            run(&mut fw, "firewall default", "lan0 allow")
                .unwrap_err()
                .field,
            "IFACE ACTION"
        );
        assert_eq!(fw, before, "a refused edit changes nothing");
        for args in [
            "lan0 dport 80 permit",
            "lan0 src 10.0.0.0/8 dst 2001:db8::/32 permit",
            "lan0 proto icmp src 2001:db8::/32 permit",
        ] {
            let mut edited = fw.clone();
            run(&mut edited, "firewall rule add", args).unwrap();
            let mut v = Validation::default();
            v.interfaces.insert("lan0".into());
            validate(&edited, &mut v);
            assert_eq!(v.errors.len(), 1, "{args}: {:?}", v.errors);
            assert_eq!(v.errors[0].path, "firewall[0].rules[0]");
        }
        let mut edited = fw.clone();
        run(&mut edited, "firewall ips", "lan0 ok hex:zz").unwrap();
        let mut v = Validation::default();
        v.interfaces.insert("lan0".into());
        validate(&edited, &mut v);
        assert_eq!(v.errors[0].path, "firewall[0].ips");
    }
}
