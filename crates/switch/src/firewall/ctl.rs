//! The firewall's control surface, registered from here (see [`crate::ctl`]): `show firewall`
//! ([`SHOWS`]). The `[[firewall]]` section is [`SECTION`].

use super::acl::Action;
use super::config::{objects, validate, FirewallConfig};
use super::control::FirewallInfo;
use crate::ctl::{json, typed, Align, Section, Show, Table};

/// `[[firewall]]` (no `ctl` verbs yet: edit the file and reload).
pub const SECTION: Section<Vec<FirewallConfig>> = Section {
    key: "firewall",
    validate: |s, v| validate(s, v),
    objects: |s, o| objects(s, o),
    verbs: &[],
};

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
                x.src.to_string(),
                x.dst.to_string(),
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
    }
    out += &format!(
        "connections: {} tracked ({} reflected), {} created, {} expired\n",
        f.connections, f.reflected, f.connections_created, f.connections_expired
    );
    out
}
