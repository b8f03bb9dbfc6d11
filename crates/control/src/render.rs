//! Plain-text output of `vecswitch ctl` for people: aligned tables shaped like `vppctl`'s
//! (`show runtime`: Name, Calls, Vectors, Packets, Drops, Clocks/pkt, Vectors/Call). [`render`]
//! takes the request and the `data` of its answer (JSON) and never fails: a field the switch did
//! not send prints as `-`, an unknown shape prints as pretty JSON.

use crate::config::Config;
use crate::protocol::{Request, ShowWhat};
use serde_json::Value;

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A text table with a header row.
#[derive(Debug, Clone)]
pub struct Table {
    head: Vec<(String, Align)>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[(&str, Align)]) -> Table {
        Table {
            head: head.iter().map(|(h, a)| (h.to_string(), *a)).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders with two spaces between columns and no trailing spaces.
    pub fn render(&self) -> String {
        let n = self.head.len();
        let mut w: Vec<usize> = self.head.iter().map(|(h, _)| h.chars().count()).collect();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut s = String::new();
            for (i, c) in cells.iter().enumerate().take(n) {
                if i > 0 {
                    s.push_str("  ");
                }
                let pad = w[i].saturating_sub(c.chars().count());
                match self.head[i].1 {
                    Align::Left => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(
            self.head.iter().map(|(h, _)| h.as_str()).collect(),
            &mut out,
        );
        for r in &self.rows {
            line(r.iter().map(String::as_str).collect(), &mut out);
        }
        out
    }
}

/// The value at a dotted path (`stats.rx_packets`).
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| cur.get(k))
}

/// A cell: strings bare, numbers as they are, floats with 2 decimals, missing as `-`.
fn cell(v: &Value, path: &str) -> String {
    match at(v, path) {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => {
            if n.is_f64() {
                format!("{:.2}", n.as_f64().unwrap_or(0.0))
            } else {
                n.to_string()
            }
        }
        Some(other) => other.to_string(),
    }
}

fn flag(v: &Value, path: &str, yes: &str, no: &str) -> String {
    match at(v, path).and_then(Value::as_bool) {
        Some(true) => yes.into(),
        Some(false) => no.into(),
        None => "-".into(),
    }
}

fn items(data: &Value) -> &[Value] {
    data.as_array().map(Vec::as_slice).unwrap_or(&[])
}

use Align::{Left as L, Right as R};

fn ports(data: &Value) -> String {
    let mut t = Table::new(&[
        ("Name", L),
        ("Idx", R),
        ("Admin", L),
        ("Link", L),
        ("Service", L),
        ("RX packets", R),
        ("RX bytes", R),
        ("RX drops", R),
        ("TX packets", R),
        ("TX bytes", R),
        ("TX drops", R),
        ("Capture", L),
        ("Backend", L),
    ]);
    for p in items(data) {
        let capture = match at(p, "capture") {
            Some(c) if !c.is_null() => format!(
                "{} {}{}",
                cell(c, "path"),
                cell(c, "captured"),
                if at(c, "active").and_then(Value::as_bool) == Some(true) {
                    ""
                } else {
                    " (done)"
                }
            ),
            _ => "-".into(),
        };
        let service = match at(p, "service.type").and_then(Value::as_str) {
            Some("xconnect") => format!("xconnect -> {}", cell(p, "service.to")),
            Some("bridge") => format!("bridge {}", cell(p, "service.bridge")),
            Some(other) => other.to_string(),
            None => "-".into(),
        };
        t.row(vec![
            cell(p, "name"),
            cell(p, "index"),
            flag(p, "admin_up", "up", "down"),
            cell(p, "link"),
            service,
            cell(p, "stats.rx_packets"),
            cell(p, "stats.rx_bytes"),
            cell(p, "stats.rx_dropped"),
            cell(p, "stats.tx_packets"),
            cell(p, "stats.tx_bytes"),
            cell(p, "stats.tx_dropped"),
            capture,
            cell(p, "describe"),
        ]);
    }
    t.render()
}

fn bridges(data: &Value) -> String {
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
    for b in items(data) {
        let members = at(b, "members")
            .and_then(Value::as_array)
            .map(|m| {
                m.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_else(|| "-".into());
        t.row(vec![
            cell(b, "name"),
            cell(b, "index"),
            flag(b, "settings.learn", "on", "off"),
            flag(b, "settings.forward", "on", "off"),
            flag(b, "settings.flood", "on", "off"),
            flag(b, "settings.uu_flood", "on", "off"),
            match at(b, "settings.mac_age_s").and_then(Value::as_u64) {
                Some(0) => "off".into(),
                Some(s) => format!("{s}s"),
                None => "-".into(),
            },
            cell(b, "settings.mac_limit"),
            cell(b, "learned"),
            cell(b, "statics"),
            members,
        ]);
    }
    t.render()
}

fn macs(data: &Value) -> String {
    let mut t = Table::new(&[
        ("Bridge", L),
        ("MAC", L),
        ("Port", L),
        ("Type", L),
        ("Age(s)", R),
    ]);
    for m in items(data) {
        let is_static = at(m, "static").and_then(Value::as_bool);
        t.row(vec![
            cell(m, "bridge"),
            cell(m, "mac"),
            cell(m, "port"),
            match is_static {
                Some(true) => "static".into(),
                Some(false) => "dynamic".into(),
                None => "-".into(),
            },
            if is_static == Some(true) {
                "-".into()
            } else {
                cell(m, "age_s")
            },
        ]);
    }
    format!("{}{} entries\n", t.render(), items(data).len())
}

fn xconnects(data: &Value) -> String {
    let mut t = Table::new(&[("From", L), ("To", L)]);
    for x in items(data) {
        t.row(vec![cell(x, "from"), cell(x, "to")]);
    }
    t.render()
}

fn runtime(data: &Value) -> String {
    let mut out = String::new();
    if let Some(l) = data.get("loop") {
        out.push_str(&format!(
            "Poll loop: {} polls, {} idle, {} idle sleeps, {} packets received, {} packets/s, longest gap between polls {} ns\n",
            cell(l, "polls"),
            cell(l, "idle_polls"),
            cell(l, "idle_sleeps"),
            cell(l, "rx_packets"),
            cell(l, "packets_per_s"),
            cell(l, "max_poll_gap_ns"),
        ));
    }
    if let Some(hz) = data.get("clock_hz").and_then(Value::as_f64) {
        out.push_str(&format!("Clock: {:.3} GHz\n", hz / 1e9));
    }
    let mut t = Table::new(&[
        ("Name", L),
        ("Calls", R),
        ("Vectors", R),
        ("Packets", R),
        ("Drops", R),
        ("Clocks/pkt", R),
        ("Vectors/Call", R),
    ]);
    for n in data.get("nodes").map(items).unwrap_or(&[]) {
        t.row(vec![
            cell(n, "name"),
            cell(n, "calls"),
            cell(n, "vectors"),
            cell(n, "packets"),
            cell(n, "drops"),
            at(n, "clocks_per_packet")
                .and_then(Value::as_f64)
                .map_or("-".into(), |c| {
                    if c == 0.0 {
                        "0".into()
                    } else {
                        format!("{c:.2e}")
                    }
                }),
            cell(n, "vectors_per_call"),
        ]);
    }
    out.push_str(&t.render());
    out
}

fn errors(data: &Value) -> String {
    let mut t = Table::new(&[("Count", R), ("Node", L), ("Reason", L)]);
    for e in items(data) {
        t.row(vec![cell(e, "count"), cell(e, "node"), cell(e, "reason")]);
    }
    if items(data).is_empty() {
        return format!("{}(no errors)\n", t.render());
    }
    t.render()
}

fn buffers(data: &Value) -> String {
    let mut t = Table::new(&[
        ("Total", R),
        ("Free", R),
        ("In use", R),
        ("Size", R),
        ("Headroom", R),
        ("Double frees", R),
        ("Alloc failures", R),
    ]);
    t.row(vec![
        cell(data, "total"),
        cell(data, "free"),
        cell(data, "in_use"),
        cell(data, "buffer_size"),
        cell(data, "headroom"),
        cell(data, "double_frees"),
        cell(data, "alloc_failures"),
    ]);
    t.render()
}

fn trace(data: &Value) -> String {
    let steps = items(data);
    if steps.is_empty() {
        return "No packets in trace buffer (arm it with `trace add N`)\n".into();
    }
    let mut out = String::new();
    let mut last = None;
    for s in steps {
        let pkt = cell(s, "packet");
        if last.as_ref() != Some(&pkt) {
            out.push_str(&format!("Packet {pkt}\n"));
            last = Some(pkt);
        }
        out.push_str(&format!("  {} -> {}\n", cell(s, "node"), cell(s, "next")));
        let detail = cell(s, "detail");
        if !detail.is_empty() && detail != "-" {
            for l in detail.lines() {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

fn config(data: &Value) -> String {
    match serde_json::from_value::<Config>(data.clone()).map(|c| toml::to_string(&c)) {
        Ok(Ok(s)) => s,
        _ => pretty(data),
    }
}

fn pretty(data: &Value) -> String {
    let mut s = serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string());
    s.push('\n');
    s
}

/// The text `vecswitch ctl` prints for the answer `data` to `req`.
pub fn render(req: &Request, data: &Value) -> String {
    match req {
        Request::Show { what, .. } => match what {
            ShowWhat::Ports => ports(data),
            ShowWhat::Bridge => bridges(data),
            ShowWhat::Mac => macs(data),
            ShowWhat::Xconnect => xconnects(data),
            ShowWhat::Runtime => runtime(data),
            ShowWhat::Errors => errors(data),
            ShowWhat::Buffers => buffers(data),
            ShowWhat::Trace => trace(data),
            ShowWhat::Config => config(data),
            ShowWhat::Version => format!(
                "vecswitch {}\nconfig: {}\nuptime: {} s\nchanges applied: {}\nports: {}, bridges: {}, xconnect directions: {}\n",
                cell(data, "version"),
                cell(data, "config"),
                cell(data, "uptime_s"),
                cell(data, "changes_applied"),
                cell(data, "ports"),
                cell(data, "bridges"),
                cell(data, "xconnects"),
            ),
        },
        Request::CaptureStop { .. } => format!(
            "{}: {} frames captured{}\n",
            cell(data, "path"),
            cell(data, "captured"),
            match at(data, "error").and_then(Value::as_str) {
                Some(e) => format!(" (stopped by an error: {e})"),
                None => String::new(),
            }
        ),
        Request::MacFlush { .. } => format!("{} learned entries flushed\n", cell(data, "flushed")),
        Request::ReloadPlan { .. } => match data.get("changes").and_then(Value::as_array) {
            Some(ch) if ch.is_empty() => "no change\n".into(),
            Some(ch) => ch
                .iter()
                .map(|c| format!("would {}\n", c.as_str().unwrap_or("?")))
                .collect(),
            None => pretty(data),
        },
        _ => match data.get("changes").and_then(Value::as_array) {
            Some(ch) if ch.is_empty() => "no change\n".into(),
            Some(ch) => ch.iter().map(|c| format!("{}\n", c.as_str().unwrap_or("?"))).collect(),
            None if data.is_null() => String::new(),
            None => pretty(data),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn show(what: ShowWhat) -> Request {
        Request::Show { what, bridge: None }
    }

    #[test]
    fn table_aligns_columns() {
        let mut t = Table::new(&[("Name", L), ("N", R)]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["long-name".into(), "12345".into()]);
        assert_eq!(
            t.render(),
            "Name           N\na              1\nlong-name  12345\n"
        );
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
            "loop": {"polls": 100, "idle_polls": 90, "idle_sleeps": 5, "rx_packets": 2560, "packets_per_s": 0.0},
            "clock_hz": 2.6e9
        });
        let s = render(&show(ShowWhat::Runtime), &data);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("Poll loop: 100 polls, 90 idle"), "{s}");
        assert_eq!(lines[1], "Clock: 2.600 GHz");
        assert_eq!(
            lines[2],
            "Name            Calls  Vectors  Packets  Drops  Clocks/pkt  Vectors/Call"
        );
        assert_eq!(
            lines[3],
            "ethernet-input     10       10     2560      3      4.15e1          1.00"
        );
        assert!(lines[4].starts_with("l2-fwd"));
    }

    #[test]
    fn ports_table_has_service_and_counters() {
        let data = json!([{
            "index": 0, "name": "p0", "admin_up": true, "link": "down",
            "service": {"type": "xconnect", "to": "p1"},
            "stats": {"rx_packets": 5, "rx_bytes": 320, "rx_dropped": 0, "tx_packets": 7, "tx_bytes": 448, "tx_dropped": 1},
            "describe": "memif server /run/m.sock id 0"
        }]);
        let s = render(&show(ShowWhat::Ports), &data);
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
    fn missing_fields_print_as_dash() {
        let s = render(&show(ShowWhat::Mac), &json!([{"mac": "02:00:00:00:00:01"}]));
        assert!(s.contains("02:00:00:00:00:01"));
        assert!(s.contains(" - "), "{s}");
        assert!(s.ends_with("1 entries\n"));
    }

    #[test]
    fn errors_trace_and_changes() {
        let s = render(
            &show(ShowWhat::Errors),
            &json!([{"node": "l2-fwd", "reason": "no-member", "count": 12}]),
        );
        assert_eq!(s, "Count  Node    Reason\n   12  l2-fwd  no-member\n");
        assert!(render(&show(ShowWhat::Errors), &json!([])).contains("(no errors)"));
        let s = render(
            &show(ShowWhat::Trace),
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
        let s = render(&show(ShowWhat::Config), &serde_json::to_value(&c).unwrap());
        assert!(s.contains("[[bridge]]"), "{s}");
        assert_eq!(Config::from_toml(&s, "t").unwrap(), c);
    }
}
