//! The bond feature's control surface, registered from here (see [`crate::ctl`]): the `[[bond]]`
//! section ([`SECTION`]) with its verbs `bond add|del` and `bond member add|del`, and
//! `show bond` / `show lacp` ([`SHOWS`]).

use serde::de::DeserializeOwned;

use super::config::{bond_objects, validate_bonds, BondConfig};
use super::control::{BondInfo, LacpMemberInfo};
use crate::ctl::table::kebab;
use crate::ctl::{json, typed, Align, Section, Show, Table, Verb};
use crate::object::EditError;

use Align::{Left as L, Right as R};

/// `[[bond]]` and its `ctl` verbs.
pub const SECTION: Section<Vec<BondConfig>> = Section {
    key: "bond",
    validate: |b, v| validate_bonds(b, v),
    objects: |b, o| bond_objects(b, o),
    verbs: &[
        Verb {
            names: &["bond add", "bond create"],
            usage: "NAME MODE [hash l2|l23|l34] [lacp-rate fast|slow] [MEMBER ...]",
            help: "adds bond NAME (MODE active-backup|xor|broadcast|lacp) over member ports",
            apply: add,
        },
        Verb {
            names: &["bond del", "bond delete"],
            usage: "NAME",
            help: "deletes bond NAME (its members become plain ports again)",
            apply: del,
        },
        Verb {
            names: &["bond member add"],
            usage: "BOND PORT",
            help: "adds port PORT to bond BOND",
            apply: |b, w| member_add(b, w),
        },
        Verb {
            names: &[
                "bond member del",
                "bond member delete",
                "bond member remove",
            ],
            usage: "BOND PORT",
            help: "takes port PORT out of bond BOND",
            apply: |b, w| member_del(b, w),
        },
    ],
};

/// A kebab-case serde enum from a word.
fn word<T: DeserializeOwned>(
    field: &'static str,
    w: &str,
    accepted: &'static str,
) -> Result<T, EditError> {
    T::deserialize(serde_json::Value::String(w.to_string())).map_err(|_| EditError {
        field,
        value: w.to_string(),
        accepted,
    })
}

/// `bond add NAME MODE [hash H] [lacp-rate R] [MEMBER ...]`.
fn add(bonds: &mut Vec<BondConfig>, w: &[String]) -> Result<(), EditError> {
    let [name, mode, rest @ ..] = w else {
        return Err(EditError {
            field: "NAME MODE",
            value: w.join(" "),
            accepted: "a bond name and a mode (`lag0 lacp`)",
        });
    };
    let mut b = BondConfig {
        name: name.clone(),
        mode: word("MODE", mode, "active-backup, xor, broadcast or lacp")?,
        hash: Default::default(),
        lacp_rate: Default::default(),
        members: Vec::new(),
    };
    let mut it = rest.iter();
    while let Some(w) = it.next() {
        let mut value = |field: &'static str, accepted: &'static str| {
            it.next().cloned().ok_or(EditError {
                field,
                value: String::new(),
                accepted,
            })
        };
        match w.as_str() {
            "hash" => {
                const ACC: &str = "l2, l23 or l34";
                b.hash = word("hash", &value("hash", ACC)?, ACC)?;
            }
            "lacp-rate" => {
                const ACC: &str = "fast or slow";
                b.lacp_rate = word("lacp-rate", &value("lacp-rate", ACC)?, ACC)?;
            }
            m => b.members.push(m.to_string()),
        }
    }
    bonds.push(b);
    Ok(())
}

fn find<'a>(bonds: &'a mut [BondConfig], name: &str) -> Result<&'a mut BondConfig, EditError> {
    bonds
        .iter_mut()
        .find(|b| b.name == name)
        .ok_or_else(|| EditError {
            field: "BOND",
            value: name.to_string(),
            accepted: "the name of a bond in the running config",
        })
}

fn one<'a>(w: &'a [String], field: &'static str) -> Result<&'a String, EditError> {
    match w {
        [x] => Ok(x),
        _ => Err(EditError {
            field,
            value: w.join(" "),
            accepted: "one name",
        }),
    }
}

/// `bond del NAME`.
fn del(bonds: &mut Vec<BondConfig>, w: &[String]) -> Result<(), EditError> {
    let name = one(w, "NAME")?;
    find(bonds, name)?;
    bonds.retain(|b| b.name != *name);
    Ok(())
}

fn two(w: &[String]) -> Result<(&String, &String), EditError> {
    match w {
        [b, p] => Ok((b, p)),
        _ => Err(EditError {
            field: "BOND PORT",
            value: w.join(" "),
            accepted: "a bond name and a port name",
        }),
    }
}

/// `bond member add BOND PORT`.
fn member_add(bonds: &mut [BondConfig], w: &[String]) -> Result<(), EditError> {
    let (bond, port) = two(w)?;
    find(bonds, bond)?.members.push(port.clone());
    Ok(())
}

/// `bond member del BOND PORT`.
fn member_del(bonds: &mut [BondConfig], w: &[String]) -> Result<(), EditError> {
    let (bond, port) = two(w)?;
    let b = find(bonds, bond)?;
    if !b.members.contains(port) {
        return Err(EditError {
            field: "PORT",
            value: port.clone(),
            accepted: "a member of the bond",
        });
    }
    b.members.retain(|m| m != port);
    Ok(())
}

/// `show bond`, `show lacp`.
pub const SHOWS: &[Show] = &[
    Show {
        word: "bond",
        aliases: &["bonds"],
        args: &[],
        help: "bonds: mode, hash, members, which carry traffic",
        run: |sw, _| json("bond", sw.show_bond()),
        render: |v| typed::<Vec<BondInfo>>(v).map(|b| bonds(&b)),
    },
    Show {
        word: "lacp",
        aliases: &[],
        args: &[],
        help: "LACP per bond member: actor, partner, machine states, LACPDU counters",
        run: |sw, _| json("lacp", sw.show_lacp()),
        render: |v| typed::<Vec<LacpMemberInfo>>(v).map(|m| lacp(&m)),
    },
];

fn bonds(bs: &[BondInfo]) -> String {
    let mut t = Table::new(&[
        ("Bond", L),
        ("Mode", L),
        ("Hash", L),
        ("MAC", L),
        ("Members (active*)", L),
        ("Rx", R),
        ("Tx", R),
    ]);
    for b in bs {
        let members: Vec<String> = b
            .members
            .iter()
            .map(|m| format!("{}{}", m.name, if m.active { "*" } else { "" }))
            .collect();
        t.row(vec![
            b.name.clone(),
            kebab(&b.mode),
            kebab(&b.hash),
            b.mac.clone(),
            members.join(" "),
            b.counters.rx_packets.to_string(),
            b.counters.tx_packets.to_string(),
        ]);
    }
    t.render()
}

fn lacp(ms: &[LacpMemberInfo]) -> String {
    let mut t = Table::new(&[
        ("Bond", L),
        ("Member", L),
        ("Actor state", L),
        ("Partner system", L),
        ("Key", R),
        ("Partner state", L),
        ("Rx", L),
        ("Mux", L),
        ("PDUs in", R),
        ("PDUs out", R),
        ("Timeouts", R),
    ]);
    for m in ms {
        t.row(vec![
            m.bond.clone(),
            m.member.clone(),
            format!("{:#04x}", m.actor.state),
            m.partner.system.clone(),
            m.partner.key.to_string(),
            format!("{:#04x}", m.partner.state),
            kebab(&m.rx_state),
            kebab(&m.mux_state),
            m.counters.rx_lacpdus.to_string(),
            m.counters.tx_lacpdus.to_string(),
            m.counters.timeouts.to_string(),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bond::{BondMode, HashPolicy, LacpRate};

    fn run(bonds: &mut Vec<BondConfig>, verb: usize, line: &str) -> Result<(), EditError> {
        let w: Vec<String> = line.split_whitespace().map(String::from).collect();
        (SECTION.verbs[verb].apply)(bonds, &w)
    }

    #[test]
    fn verbs_edit_the_section() {
        let mut b = Vec::new();
        run(&mut b, 0, "lag0 xor hash l34 lacp-rate slow p0 p1").unwrap();
        assert_eq!(
            b[0],
            BondConfig {
                name: "lag0".into(),
                mode: BondMode::Xor,
                hash: HashPolicy::L34,
                lacp_rate: LacpRate::Slow,
                members: vec!["p0".into(), "p1".into()],
            }
        );
        let e = run(&mut b, 0, "lag1 fast").unwrap_err();
        assert_eq!((e.field, e.value.as_str()), ("MODE", "fast"));
        let e = run(&mut b, 0, "lag1 lacp hash").unwrap_err();
        assert_eq!(e.field, "hash");
        run(&mut b, 3, "lag0 p0").unwrap();
        assert_eq!(b[0].members, ["p1"]);
        assert_eq!(run(&mut b, 3, "lag0 p0").unwrap_err().field, "PORT");
        run(&mut b, 2, "lag0 p2").unwrap();
        assert_eq!(b[0].members, ["p1", "p2"]);
        assert_eq!(run(&mut b, 1, "lag9").unwrap_err().field, "BOND");
        run(&mut b, 1, "lag0").unwrap();
        assert!(b.is_empty());
    }
}
