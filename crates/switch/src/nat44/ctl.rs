//! NAT44's control surface, registered from here (see [`crate::ctl`]): `show nat44
//! [sessions|summary]` ([`SHOWS`]) and the `ctl` verbs of `[nat44]` ([`VERBS`]):
//!
//! ```text
//! nat44 interface IFACE inside|outside|off
//! nat44 pool add|del ADDRESS|PREFIX|FIRST-LAST
//! nat44 hairpinning on|off
//! nat44 set KEY VALUE          # a key of [nat44.settings]: udp_s, max_sessions, …
//! ```
//!
//! The `[nat44]` section is bound in `crates/control`'s `sections.rs` with
//! [`super::config::validate`] and [`super::config::objects`] (they read `[ip]` too: an outside
//! interface needs an address) and these verbs; an edit is validated whole and applied all or
//! nothing (a rejected one leaves the switch as it was).

use serde::{Deserialize, Serialize};

use super::config::Nat44Config;
use super::control::{Nat44Sessions, Nat44Summary};
use crate::ctl::{json, typed, Align, Show, ShowError, Table, Verb};
use crate::error::SwitchError;
use crate::object::EditError;

/// The `ctl` verbs of `[nat44]`.
pub const VERBS: &[Verb<Nat44Config>] = &[
    Verb {
        names: &["nat44 interface"],
        usage: "IFACE inside|outside|off",
        help: "gives IFACE a NAT44 role (an outside one masquerades to its first IPv4 address), or none",
        apply: interface,
    },
    Verb {
        names: &["nat44 set"],
        usage: "KEY VALUE",
        help: "sets a NAT44 setting: tcp_established_s, tcp_transitory_s, udp_s, icmp_s, max_sessions, max_sessions_per_host",
        apply: set,
    },
    Verb {
        names: &["nat44 pool"],
        usage: "add|del ADDRESS|PREFIX|FIRST-LAST",
        help: "adds a range to (or removes one from) the pool of outside addresses; an empty pool masquerades to the outside interfaces' addresses",
        apply: pool,
    },
    Verb {
        names: &["nat44 hairpinning"],
        usage: "on|off",
        help: "lets inside hosts reach each other through their outside addresses and ports (RFC 4787 REQ-9)",
        apply: hairpinning,
    },
];

fn interface(nat: &mut Nat44Config, w: &[String]) -> Result<(), EditError> {
    let bad = || EditError {
        field: "IFACE ROLE",
        value: w.join(" "),
        accepted: "an interface and inside, outside or off",
    };
    let [iface, role] = w else {
        return Err(bad());
    };
    if !matches!(role.as_str(), "inside" | "outside" | "off") {
        return Err(bad());
    }
    nat.inside.retain(|i| i != iface);
    nat.outside.retain(|i| i != iface);
    match role.as_str() {
        "inside" => nat.inside.push(iface.clone()),
        "outside" => nat.outside.push(iface.clone()),
        _ => {}
    }
    Ok(())
}

fn pool(nat: &mut Nat44Config, w: &[String]) -> Result<(), EditError> {
    let bad = || EditError {
        field: "add|del RANGE",
        value: w.join(" "),
        accepted: "add or del and one pool entry (the validation checks the entry)",
    };
    let [op, entry] = w else {
        return Err(bad());
    };
    match op.as_str() {
        "add" => nat.pool.push(entry.clone()),
        "del" => {
            let before = nat.pool.len();
            nat.pool.retain(|e| e != entry);
            if nat.pool.len() == before {
                return Err(EditError {
                    field: "RANGE",
                    value: entry.clone(),
                    accepted: "an entry of the pool, as written in it",
                });
            }
        }
        _ => return Err(bad()),
    }
    Ok(())
}

fn hairpinning(nat: &mut Nat44Config, w: &[String]) -> Result<(), EditError> {
    nat.hairpinning = match w {
        [x] if x == "on" => true,
        [x] if x == "off" => false,
        _ => {
            return Err(EditError {
                field: "on|off",
                value: w.join(" "),
                accepted: "on or off",
            })
        }
    };
    Ok(())
}

fn set(nat: &mut Nat44Config, w: &[String]) -> Result<(), EditError> {
    let [key, value] = w else {
        return Err(EditError {
            field: "KEY VALUE",
            value: w.join(" "),
            accepted: "a setting and its value",
        });
    };
    let v: u32 = value.parse().map_err(|_| EditError {
        field: "VALUE",
        value: value.clone(),
        accepted: "a whole number 0..=4294967295 (the validation wants 1 or more)",
    })?;
    let s = &mut nat.settings;
    let field = match key.as_str() {
        "tcp_established_s" => &mut s.tcp_established_s,
        "tcp_transitory_s" => &mut s.tcp_transitory_s,
        "udp_s" => &mut s.udp_s,
        "icmp_s" => &mut s.icmp_s,
        "max_sessions" => &mut s.max_sessions,
        "max_sessions_per_host" => &mut s.max_sessions_per_host,
        _ => {
            return Err(EditError {
                field: "KEY",
                value: key.clone(),
                accepted: "tcp_established_s, tcp_transitory_s, udp_s, icmp_s, max_sessions, max_sessions_per_host",
            })
        }
    };
    *field = v;
    Ok(())
}

/// Most sessions `show nat44 sessions` lists.
pub const SHOW_MAX_SESSIONS: usize = 1000;

/// The answer of `show nat44`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nat44Show {
    Sessions(Nat44Sessions),
    Summary(Nat44Summary),
}

/// `show nat44 [sessions|summary]`.
pub const SHOWS: &[Show] = &[Show {
    word: "nat44",
    aliases: &["nat"],
    args: &["sessions|summary"],
    help: "NAT44: the sessions (first 1000: inside, outside, remote, TCP state, idle/timeout, packets) or the summary (interfaces, counts by protocol and state, limits)",
    run: |sw, args| match args.first().map(String::as_str) {
        None | Some("sessions") => json(
            "nat44",
            Nat44Show::Sessions(sw.show_nat44_sessions(0, SHOW_MAX_SESSIONS)),
        ),
        Some("summary") => json("nat44", Nat44Show::Summary(sw.show_nat44_summary())),
        Some(w) => Err(ShowError::Switch(SwitchError::InvalidValue {
            field: "show nat44",
            value: w.to_string(),
            accepted: "sessions or summary",
        })),
    },
    render: |v| typed::<Nat44Show>(v).map(|s| render(&s)),
}];

fn render(s: &Nat44Show) -> String {
    use Align::{Left as L, Right as R};
    match s {
        Nat44Show::Sessions(s) => {
            let mut t = Table::new(&[
                ("Proto", L),
                ("Inside", L),
                ("Outside", L),
                ("Remote", L),
                ("TCP state", L),
                ("Idle s", R),
                ("Timeout s", R),
                ("In→out", R),
                ("Out→in", R),
            ]);
            for e in &s.sessions {
                t.row(vec![
                    e.proto.clone(),
                    e.inside.clone(),
                    e.outside.clone(),
                    e.remote.clone(),
                    format!("{:?}", e.tcp_state).to_lowercase(),
                    e.idle_s.to_string(),
                    e.timeout_s.to_string(),
                    e.packets_in2out.to_string(),
                    e.packets_out2in.to_string(),
                ]);
            }
            format!(
                "{}{} sessions ({} shown)\n",
                t.render(),
                s.total,
                s.sessions.len()
            )
        }
        Nat44Show::Summary(s) => {
            let outside: Vec<String> = s
                .outside_interfaces
                .iter()
                .map(|(i, a)| format!("{i} ({a})"))
                .collect();
            format!(
                "inside: {}\noutside: {}{}\nhairpinning: {}\nsessions: {} of {} (tcp {}: established {}, transitory {}; udp {}; icmp {}) for {} inside hosts\ncreated {}, expired {}\ntimeouts: tcp established {} s, transitory {} s, udp {} s, icmp {} s; per host at most {}\nsession slab and indexes: {}\n",
                s.inside_interfaces.join(", "),
                outside.join(", "),
                if s.pool.is_empty() {
                    String::new()
                } else {
                    format!("; pool {}", s.pool.join(", "))
                },
                if s.hairpinning { "on" } else { "off" },
                s.sessions,
                s.max_sessions,
                s.tcp,
                s.tcp_established,
                s.tcp_transitory,
                s.udp,
                s.icmp,
                s.inside_hosts,
                s.sessions_created,
                s.sessions_expired,
                s.settings.tcp_established_s,
                s.settings.tcp_transitory_s,
                s.settings.udp_s,
                s.settings.icmp_s,
                s.settings.max_sessions_per_host,
                s.memory,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::config::{AddressConfig, IpConfig};
    use crate::nat44::config::validate;
    use crate::object::Validation;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_verbs_edit_the_section_and_bad_words_change_nothing() {
        let mut nat = Nat44Config::default();
        (VERBS[0].apply)(&mut nat, &words("lan0 inside")).unwrap();
        (VERBS[0].apply)(&mut nat, &words("wan0 outside")).unwrap();
        (VERBS[1].apply)(&mut nat, &words("udp_s 120")).unwrap();
        assert_eq!(
            (nat.inside.clone(), nat.outside.clone()),
            (vec!["lan0".to_string()], vec!["wan0".to_string()])
        );
        assert_eq!(nat.settings.udp_s, 120);
        let before = nat.clone();
        for (i, args, field) in [
            (0, "lan0 sideways", "IFACE ROLE"),
            (0, "lan0", "IFACE ROLE"),
            (1, "udp 5", "KEY"),
            (1, "udp_s -1", "VALUE"),
        ] {
            assert_eq!(
                (VERBS[i].apply)(&mut nat, &words(args)).unwrap_err().field,
                field
            );
        }
        assert_eq!(nat, before);
        // A role change moves the interface; 0 reads but the validation refuses it.
        (VERBS[0].apply)(&mut nat, &words("wan0 inside")).unwrap();
        assert_eq!(nat.inside.len(), 2);
        assert!(nat.outside.is_empty());
        (VERBS[0].apply)(&mut nat, &words("wan0 off")).unwrap();
        assert_eq!(nat.inside, vec!["lan0".to_string()]);
        (VERBS[1].apply)(&mut nat, &words("max_sessions 0")).unwrap();
        let ip = IpConfig {
            address: vec![AddressConfig {
                interface: "wan0".into(),
                address: "198.51.100.1/24".parse().unwrap(),
            }],
            ..Default::default()
        };
        let mut v = Validation::default();
        v.interfaces
            .extend(["lan0".to_string(), "wan0".to_string()]);
        validate(&nat, &ip, &mut v);
        let paths: Vec<&str> = v.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, vec!["nat44.settings.max_sessions"]);
    }

    #[test]
    fn pool_and_hairpinning_verbs() {
        let mut nat = Nat44Config::default();
        (VERBS[2].apply)(&mut nat, &words("add 198.51.100.8/30")).unwrap();
        (VERBS[2].apply)(&mut nat, &words("add 198.51.100.20-198.51.100.23")).unwrap();
        (VERBS[3].apply)(&mut nat, &words("on")).unwrap();
        assert_eq!(
            nat.pool,
            vec!["198.51.100.8/30", "198.51.100.20-198.51.100.23"]
        );
        assert!(nat.hairpinning);
        (VERBS[2].apply)(&mut nat, &words("del 198.51.100.8/30")).unwrap();
        assert_eq!(nat.pool, vec!["198.51.100.20-198.51.100.23"]);
        let before = nat.clone();
        for (i, args, field) in [
            (2, "del 198.51.100.8/30", "RANGE"),
            (2, "put 198.51.100.8", "add|del RANGE"),
            (2, "add", "add|del RANGE"),
            (3, "yes", "on|off"),
        ] {
            assert_eq!(
                (VERBS[i].apply)(&mut nat, &words(args)).unwrap_err().field,
                field
            );
        }
        assert_eq!(nat, before);
        (VERBS[3].apply)(&mut nat, &words("off")).unwrap();
        assert!(!nat.hairpinning);
    }
}
