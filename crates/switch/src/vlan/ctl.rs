//! The VLAN feature's control surface, registered from here (see [`crate::ctl`]): the
//! `[[subinterface]]` section ([`SECTION`]) with its verbs `subinterface add|del`, and
//! `show subinterfaces` ([`SHOWS`]).

use super::config::{subinterface_objects, validate_subinterfaces};
use super::control::SubInterfaceInfo;
use super::SubInterfaceConfig;
use crate::ctl::{json, typed, Align, Section, Show, Table, Verb};
use crate::object::EditError;

/// `[[subinterface]]` and its `ctl` verbs.
pub const SECTION: Section<Vec<SubInterfaceConfig>> = Section {
    key: "subinterface",
    validate: |s, v| validate_subinterfaces(s, v),
    objects: |s, o| subinterface_objects(s, o),
    verbs: &[
        Verb {
            names: &["subinterface add", "sub-interface add"],
            usage: "PARENT ID ENCAP [tag-rewrite REWRITE]",
            help: "adds a VLAN sub-interface PARENT.ID (VPP's words: dot1q 10 exact-match, dot1ad 100 inner-dot1q any, default, untagged; tag-rewrite pop 1, push dot1ad 300, translate 1-1 dot1q 20, ...)",
            apply: add,
        },
        Verb {
            names: &[
                "subinterface del",
                "subinterface delete",
                "sub-interface del",
                "sub-interface delete",
            ],
            usage: "NAME",
            help: "deletes sub-interface NAME (PARENT.ID)",
            apply: del,
        },
    ],
};

/// `subinterface add PARENT ID ENCAP... [tag-rewrite REWRITE...]`, the words as VPP writes them:
/// `subinterface add uni0 10 dot1q 10 exact-match tag-rewrite push dot1ad 300`.
fn add(subs: &mut Vec<SubInterfaceConfig>, w: &[String]) -> Result<(), EditError> {
    let [parent, id, rest @ ..] = w else {
        return Err(EditError {
            field: "PARENT ID ENCAP",
            value: w.join(" "),
            accepted: "a parent interface, a sub-interface number and an encapsulation (`uni0 10 dot1q 10`)",
        });
    };
    let id = id.parse().map_err(|_| EditError {
        field: "ID",
        value: id.clone(),
        accepted: "a sub-interface number, 0..=4294967295",
    })?;
    let (encap, rewrite) = match rest.iter().position(|x| x == "tag-rewrite") {
        Some(i) => (rest[..i].join(" "), rest[i + 1..].join(" ")),
        None => (rest.join(" "), "disable".to_string()),
    };
    let parse_err = |e: super::encap::ParseError| EditError {
        field: e.field,
        value: e.value,
        accepted: e.accepted,
    };
    subs.push(SubInterfaceConfig {
        parent: parent.clone(),
        id,
        encap: encap.parse().map_err(parse_err)?,
        tag_rewrite: rewrite.parse().map_err(parse_err)?,
    });
    Ok(())
}

/// `subinterface del NAME`.
fn del(subs: &mut Vec<SubInterfaceConfig>, w: &[String]) -> Result<(), EditError> {
    let missing = |value: String| EditError {
        field: "NAME",
        value,
        accepted: "the name of a sub-interface in the running config, `<parent>.<id>`",
    };
    let [name] = w else {
        return Err(missing(w.join(" ")));
    };
    let before = subs.len();
    subs.retain(|s| s.name() != *name);
    if subs.len() == before {
        return Err(missing(name.clone()));
    }
    Ok(())
}

/// `show subinterfaces`.
pub const SHOWS: &[Show] = &[Show {
    word: "subinterfaces",
    aliases: &["sub-interfaces", "subinterface", "sub-interface"],
    args: &[],
    help: "VLAN sub-interfaces: parent, encapsulation, tag rewrite, service, counters",
    run: |sw, _| json("subinterfaces", sw.show_subinterfaces()),
    render: |v| typed::<Vec<SubInterfaceInfo>>(v).map(|s| table(&s)),
}];

fn table(ss: &[SubInterfaceInfo]) -> String {
    use Align::{Left as L, Right as R};
    let mut t = Table::new(&[
        ("Name", L),
        ("Parent", L),
        ("Encap", L),
        ("Tag-rewrite", L),
        ("State", L),
        ("Service", L),
        ("Rx packets", R),
        ("Tx packets", R),
    ]);
    for s in ss {
        t.row(vec![
            s.name.clone(),
            s.parent.clone(),
            s.encap.clone(),
            s.tag_rewrite.clone(),
            if s.admin_up { "up" } else { "down" }.to_string(),
            s.service.clone(),
            s.rx_packets.to_string(),
            s.tx_packets.to_string(),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn add_and_del_edit_the_section() {
        let mut subs = Vec::new();
        (SECTION.verbs[0].apply)(
            &mut subs,
            &words("uni0 10 dot1q 10 exact-match tag-rewrite push dot1ad 300"),
        )
        .unwrap();
        assert_eq!(subs[0].name(), "uni0.10");
        assert_eq!(subs[0].encap.to_string(), "dot1q 10 exact-match");
        assert_eq!(subs[0].tag_rewrite.to_string(), "push dot1ad 300");
        let e = (SECTION.verbs[0].apply)(&mut subs, &words("uni0 x dot1q 10")).unwrap_err();
        assert_eq!(e.field, "ID");
        let e = (SECTION.verbs[0].apply)(&mut subs, &words("uni0 11 dot1q 5000")).unwrap_err();
        assert!(e.to_string().contains("5000"), "{e}");
        let e = (SECTION.verbs[1].apply)(&mut subs, &words("uni0.99")).unwrap_err();
        assert!(e.to_string().contains("NAME = \"uni0.99\""), "{e}");
        (SECTION.verbs[1].apply)(&mut subs, &words("uni0.10")).unwrap();
        assert!(subs.is_empty());
    }
}
