//! NAT44's control surface, registered from here (see [`crate::ctl`]): `show nat44
//! [sessions|summary]` ([`SHOWS`]). The `[nat44]` section is bound in `crates/control`'s
//! `sections.rs` with [`super::config::validate`] and [`super::config::objects`] (they read
//! `[ip]` too: an outside interface needs an address).

use serde::{Deserialize, Serialize};

use super::control::{Nat44Sessions, Nat44Summary};
use crate::ctl::{json, typed, Align, Show, ShowError, Table};
use crate::error::SwitchError;

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
                "inside: {}\noutside: {}\nsessions: {} of {} (tcp {}: established {}, transitory {}; udp {}; icmp {}) for {} inside hosts\ncreated {}, expired {}\ntimeouts: tcp established {} s, transitory {} s, udp {} s, icmp {} s; per host at most {}\n",
                s.inside_interfaces.join(", "),
                outside.join(", "),
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
            )
        }
    }
}
