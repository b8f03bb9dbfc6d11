//! Plain-text output of `vecswitch ctl` for people: aligned tables shaped like `vppctl`'s
//! (`show runtime`: Name, Calls, Vectors, Packets, Drops, Clocks/pkt, Vectors/Call). [`render`]
//! takes the request and the `data` of its answer (JSON). A `show` is printed by its registered
//! renderer (`vecswitch_switch::ctl::Show::render`, in the feature's folder), which reads the
//! JSON back into the very type the switch's `show_*` method returned, and an action (`mac flush`)
//! by its registered renderer too; the other answers (changes, captures, saves) are printed here. It never fails: an answer that is not of the
//! expected type (a switch of another version) prints as pretty JSON.

use crate::protocol::{Changes, Request, Saved, VersionInfo};
use serde_json::Value;
use vecswitch_switch::ctl::typed;
use vecswitch_switch::CaptureInfo;

pub use vecswitch_switch::ctl::{Align, Table};

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

pub(crate) fn version(v: &VersionInfo) -> String {
    let mut s = format!(
        "vecswitch {}\nconfig: {}\nuptime: {} s\nchanges applied: {}\nports: {}, bridges: {}, xconnect directions: {}\n",
        v.version,
        opt(v.config.as_deref()),
        v.uptime_s,
        v.changes_applied,
        v.ports,
        v.bridges,
        v.xconnects,
    );
    if let Some(q) = &v.queued {
        s.push_str(&format!("queued: {q}\n"));
    }
    if let Some(f) = &v.queued_failed {
        s.push_str(&format!("queued change failed: {f}\n"));
    }
    s
}

fn capture_stopped(c: &CaptureInfo) -> String {
    format!(
        "{}: {} frames captured, {} written{}{}\n",
        c.path,
        c.captured,
        c.written,
        if c.dropped > 0 {
            format!(", {} not captured (the writer was behind)", c.dropped)
        } else {
            String::new()
        },
        match &c.error {
            Some(e) => format!(" (stopped by an error: {e})"),
            None => String::new(),
        }
    )
}

fn changes(c: &Changes, prefix: &str) -> String {
    if c.changes.is_empty() {
        return "no change\n".into();
    }
    c.changes.iter().map(|c| format!("{prefix}{c}\n")).collect()
}

fn pretty(data: &Value) -> String {
    let mut s = serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string());
    s.push('\n');
    s
}

/// The text `vecswitch ctl` prints for the answer `data` to `req`.
pub fn render(req: &Request, data: &Value) -> String {
    let text = match req {
        Request::Show { what, .. } => crate::sections::find_show(what).and_then(|s| s.render(data)),
        Request::CaptureStop { .. } => typed::<CaptureInfo>(data).map(|v| capture_stopped(&v)),
        Request::Action { action, .. } => {
            crate::sections::find_action(action).and_then(|a| (a.render)(data))
        }
        Request::ReloadPlan { .. } => typed::<Changes>(data).map(|c| changes(&c, "would ")),
        Request::Save { .. } => typed::<Saved>(data).map(|s| {
            format!(
                "saved the running config to {} ({} bytes)\n",
                s.path, s.bytes
            )
        }),
        _ if data.is_null() => Some(String::new()),
        _ => typed::<Changes>(data).map(|c| changes(&c, "")),
    };
    text.unwrap_or_else(|| pretty(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use serde_json::json;
    use vecswitch_switch::{MacEntry, MacTableInfo};

    fn show(what: &str) -> Request {
        Request::Show {
            what: what.into(),
            args: vec![],
        }
    }

    #[test]
    fn runtime_like_vppctl() {
        let data = json!({
            "nodes": [
                {"name": "ethernet-input", "calls": 10, "vectors": 10, "packets": 2560, "drops": 3,
                 "time_ns": 1000, "clocks_per_packet": 41.5, "vectors_per_call": 1.0, "packets_per_vector": 256.0},
                {"name": "l2-fwd", "calls": 0, "vectors": 0, "packets": 0, "drops": 0,
                 "time_ns": 0, "clocks_per_packet": 0.0, "vectors_per_call": 0.0, "packets_per_vector": 0.0}
            ],
            "loop": {"polls": 100, "idle_polls": 90, "idle_sleeps": 5, "rx_packets": 2560, "busy_ns": 0,
                     "packets_per_s": 0.0, "max_poll_gap_ns": 1000},
            "clock_hz": 2.6e9
        });
        let s = render(&show("runtime"), &data);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("Poll loop: 100 polls, 90 idle"), "{s}");
        // An answer without the stall fields (an older switch) reads them as zero.
        assert!(lines[1].starts_with("Longest stall 0 ns"), "{s}");
        assert_eq!(lines[2], "Poll gaps: none");
        assert_eq!(lines[3], "Clock: 2.600 GHz");
        assert_eq!(
            lines[4],
            "Name            Calls  Vectors  Packets  Drops  Clocks/pkt  Vectors/Call"
        );
        assert_eq!(
            lines[5],
            "ethernet-input     10       10     2560      3      4.15e1          1.00"
        );
        assert!(lines[6].starts_with("l2-fwd"));
    }

    #[test]
    fn ports_table_has_service_and_counters() {
        let data = json!([{
            "index": 0, "name": "p0", "admin_up": true, "link": "down",
            "service": {"type": "xconnect", "to": "p1"},
            "stats": {"rx_packets": 5, "rx_bytes": 320, "rx_dropped": 0, "tx_packets": 7, "tx_bytes": 448, "tx_dropped": 1},
            "describe": "memif server /run/m.sock id 0"
        }]);
        let s = render(&show("ports"), &data);
        let row = s.lines().nth(1).unwrap();
        for want in [
            "p0",
            "up",
            "down",
            "xconnect -> p1",
            "320",
            "448",
            "memif server",
        ] {
            assert!(row.contains(want), "{want} missing in {row}");
        }
    }

    #[test]
    fn macs_from_typed_entries_and_other_shapes_as_json() {
        let entries = vec![
            MacEntry {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:01".into(),
                port: "p0".into(),
                is_static: true,
                age_s: 7,
            },
            MacEntry {
                bridge: "br0".into(),
                mac: "02:00:00:00:00:02".into(),
                port: "p1".into(),
                is_static: false,
                age_s: 7,
            },
        ];
        let info = MacTableInfo {
            bridge: Some("br0".into()),
            total: 5000,
            matched: 3000,
            learned: 2999,
            statics: 1,
            offset: 10,
            entries,
        };
        let s = render(&show("mac"), &serde_json::to_value(&info).unwrap());
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "3000 MACs in bridge br0 (2999 learned, 1 static; 5000 in the table), showing 2 from 10",
            "{s}"
        );
        assert!(
            lines[2].contains("02:00:00:00:00:01") && lines[2].contains("static"),
            "{s}"
        );
        assert!(lines[2].ends_with(" -"), "a static entry has no age: {s}");
        assert!(
            lines[3].contains("dynamic") && lines[3].ends_with(" 7"),
            "{s}"
        );
        // A switch of another version answering another shape: printed, not refused.
        let odd = json!([{"mac": "02:00:00:00:00:01"}]);
        let s = render(&show("mac"), &odd);
        assert!(s.contains("\"mac\": \"02:00:00:00:00:01\""), "{s}");
    }

    #[test]
    fn errors_trace_and_changes() {
        let s = render(
            &show("errors"),
            &json!([{"node": "l2-fwd", "reason": "no-member", "count": 12}]),
        );
        assert_eq!(s, "Count  Node    Reason\n   12  l2-fwd  no-member\n");
        assert!(render(&show("errors"), &json!([])).contains("(no errors)"));
        let s = render(
            &show("trace"),
            &json!([{"packet": 1, "node": "ethernet-input", "next": "l2-learn", "detail": "02:.. -> ff:.."},
                    {"packet": 1, "node": "l2-learn", "next": "drop: mac-limit", "detail": ""}]),
        );
        assert_eq!(
            s,
            "Packet 1\n  ethernet-input -> l2-learn\n    02:.. -> ff:..\n  l2-learn -> drop: mac-limit\n"
        );
        let s = render(&Request::ClearCounters {}, &Value::Null);
        assert_eq!(s, "");
        let s = render(
            &Request::Reload { path: None },
            &json!({"changes": ["add port p1 to bridge br0"]}),
        );
        assert_eq!(s, "add port p1 to bridge br0\n");
        assert_eq!(
            render(&Request::Reload { path: None }, &json!({"changes": []})),
            "no change\n"
        );
    }

    #[test]
    fn config_prints_as_toml() {
        let c = Config::from_toml("[[bridge]]\nname = \"b\"\n", "t").unwrap();
        let s = render(&show("config"), &serde_json::to_value(&c).unwrap());
        assert!(s.contains("[[bridge]]"), "{s}");
        assert_eq!(Config::from_toml(&s, "t").unwrap(), c);
    }
}
