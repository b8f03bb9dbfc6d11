//! Plain-text output of `vecswitch ctl` for people: aligned tables shaped like `vppctl`'s
//! (`show runtime`: Name, Calls, Vectors, Packets, Drops, Clocks/pkt, Vectors/Call). [`render`]
//! takes the request and the `data` of its answer (JSON), reads it back into the very types the
//! switch's `show_*` methods return ([`PortInfo`], [`BridgeInfo`], [`MacEntry`], ...) and prints
//! their fields. It never fails: an answer that is not of the expected type (a switch of another
//! version) prints as pretty JSON.

use crate::config::Config;
use crate::protocol::{Changes, Flushed, Request, Saved, ShowWhat, VersionInfo};
use crate::sections::typed;
use crate::switch_impl::XconnectInfo;
use serde_json::Value;
use vecswitch_buffer::PoolStats;
use vecswitch_graph::{ErrorCount, TraceStep};
use vecswitch_ports::LinkState;
use vecswitch_switch::bond::control::{BondInfo, LacpMemberInfo};
use vecswitch_switch::interface::InterfaceKind;
use vecswitch_switch::vlan::control::SubInterfaceInfo;
use vecswitch_switch::{
    BridgeInfo, CaptureInfo, InterfaceInfo, MacEntry, PortInfo, RuntimeInfo, ServiceInfo,
};

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

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.into()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

use Align::{Left as L, Right as R};

fn ports(ps: &[PortInfo]) -> String {
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
    for p in ps {
        let capture = match &p.capture {
            Some(c) => format!(
                "{} {}{}",
                c.path,
                c.captured,
                if c.active { "" } else { " (done)" }
            ),
            None => "-".into(),
        };
        let service = match &p.service {
            ServiceInfo::Xconnect { to } => format!("xconnect -> {to}"),
            ServiceInfo::Bridge { bridge } => format!("bridge {bridge}"),
            ServiceInfo::None => "none".into(),
        };
        let s = &p.stats;
        t.row(vec![
            p.name.clone(),
            p.index.to_string(),
            if p.admin_up { "up" } else { "down" }.into(),
            match p.link {
                LinkState::Up => "up".into(),
                LinkState::Down => "down".into(),
            },
            service,
            s.rx_packets.to_string(),
            s.rx_bytes.to_string(),
            s.rx_dropped.to_string(),
            s.tx_packets.to_string(),
            s.tx_bytes.to_string(),
            s.tx_dropped.to_string(),
            capture,
            p.describe.clone(),
        ]);
    }
    t.render()
}

/// An interface kind as `TYPE (KEY VALUE, ...)` from its serde form (`main (port 0)`), so that a
/// new kind (a sub-interface, a bond) prints without a change here.
fn kind(k: &InterfaceKind) -> String {
    match serde_json::to_value(k) {
        Ok(Value::Object(m)) => {
            let ty = m
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let rest: Vec<String> = m
                .iter()
                .filter(|(k, _)| *k != "type")
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k} {s}"),
                    v => format!("{k} {v}"),
                })
                .collect();
            if rest.is_empty() {
                ty
            } else {
                format!("{ty} ({})", rest.join(", "))
            }
        }
        _ => "?".into(),
    }
}

/// `show interfaces` (registered in [`crate::sections::SHOWS`]).
pub fn interfaces(is: &[InterfaceInfo]) -> String {
    let mut t = Table::new(&[
        ("Name", L),
        ("Idx", R),
        ("Kind", L),
        ("Admin", L),
        ("MAC", L),
        ("MTU", R),
        ("RX packets", R),
        ("RX bytes", R),
        ("TX packets", R),
        ("TX bytes", R),
        ("Input features", L),
        ("Output features", L),
    ]);
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(",")
        }
    };
    for i in is {
        let c = &i.counters;
        t.row(vec![
            i.name.clone(),
            i.index.to_string(),
            kind(&i.kind),
            if i.admin_up { "up" } else { "down" }.into(),
            i.mac.clone(),
            i.mtu.to_string(),
            c.rx_packets.to_string(),
            c.rx_bytes.to_string(),
            c.tx_packets.to_string(),
            c.tx_bytes.to_string(),
            list(&i.input_features),
            list(&i.output_features),
        ]);
    }
    t.render()
}

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

fn macs(ms: &[MacEntry]) -> String {
    let mut t = Table::new(&[
        ("Bridge", L),
        ("MAC", L),
        ("Port", L),
        ("Type", L),
        ("Age(s)", R),
    ]);
    for m in ms {
        t.row(vec![
            m.bridge.clone(),
            m.mac.clone(),
            m.port.clone(),
            if m.is_static { "static" } else { "dynamic" }.into(),
            if m.is_static {
                "-".into()
            } else {
                m.age_s.to_string()
            },
        ]);
    }
    format!("{}{} entries\n", t.render(), ms.len())
}

pub(crate) fn subinterfaces(ss: &[SubInterfaceInfo]) -> String {
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

fn xconnects(xs: &[XconnectInfo]) -> String {
    let mut t = Table::new(&[("From", L), ("To", L)]);
    for x in xs {
        t.row(vec![x.from.clone(), x.to.clone()]);
    }
    t.render()
}

pub(crate) fn bonds(bs: &[BondInfo]) -> String {
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

pub(crate) fn lacp(ms: &[LacpMemberInfo]) -> String {
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

/// A unit enum as its serde (kebab-case) name.
fn kebab<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

fn runtime(r: &RuntimeInfo) -> String {
    let l = &r.loop_stats;
    let mut out = format!(
        "Poll loop: {} polls, {} idle, {} idle sleeps, {} packets received, {:.2} packets/s, longest gap between polls {} ns\n",
        l.polls, l.idle_polls, l.idle_sleeps, l.rx_packets, l.packets_per_s, l.max_poll_gap_ns,
    );
    out.push_str(&format!("Clock: {:.3} GHz\n", r.clock_hz / 1e9));
    let mut t = Table::new(&[
        ("Name", L),
        ("Calls", R),
        ("Vectors", R),
        ("Packets", R),
        ("Drops", R),
        ("Clocks/pkt", R),
        ("Vectors/Call", R),
    ]);
    for n in &r.nodes {
        t.row(vec![
            n.name.clone(),
            n.calls.to_string(),
            n.vectors.to_string(),
            n.packets.to_string(),
            n.drops.to_string(),
            if n.clocks_per_packet == 0.0 {
                "0".into()
            } else {
                format!("{:.2e}", n.clocks_per_packet)
            },
            format!("{:.2}", n.vectors_per_call),
        ]);
    }
    out.push_str(&t.render());
    out
}

fn errors(es: &[ErrorCount]) -> String {
    let mut t = Table::new(&[("Count", R), ("Node", L), ("Reason", L)]);
    for e in es {
        t.row(vec![e.count.to_string(), e.node.clone(), e.reason.clone()]);
    }
    if es.is_empty() {
        return format!("{}(no errors)\n", t.render());
    }
    t.render()
}

fn buffers(b: &PoolStats) -> String {
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
        b.total.to_string(),
        b.free.to_string(),
        b.in_use.to_string(),
        b.buffer_size.to_string(),
        b.headroom.to_string(),
        b.double_frees.to_string(),
        b.alloc_failures.to_string(),
    ]);
    t.render()
}

fn trace(steps: &[TraceStep]) -> String {
    if steps.is_empty() {
        return "No packets in trace buffer (arm it with `trace add N`)\n".into();
    }
    let mut out = String::new();
    let mut last = None;
    for s in steps {
        if last != Some(s.packet) {
            out.push_str(&format!("Packet {}\n", s.packet));
            last = Some(s.packet);
        }
        out.push_str(&format!("  {} -> {}\n", s.node, s.next));
        for l in s.detail.lines() {
            out.push_str(&format!("    {l}\n"));
        }
    }
    out
}

fn config(c: &Config) -> Option<String> {
    toml::to_string(c).ok()
}

fn version(v: &VersionInfo) -> String {
    format!(
        "vecswitch {}\nconfig: {}\nuptime: {} s\nchanges applied: {}\nports: {}, bridges: {}, xconnect directions: {}\n",
        v.version,
        opt(v.config.as_deref()),
        v.uptime_s,
        v.changes_applied,
        v.ports,
        v.bridges,
        v.xconnects,
    )
}

fn capture_stopped(c: &CaptureInfo) -> String {
    format!(
        "{}: {} frames captured{}\n",
        c.path,
        c.captured,
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
        Request::Show { what, .. } => match what {
            ShowWhat::Ports => typed::<Vec<PortInfo>>(data).map(|v| ports(&v)),
            ShowWhat::Bridge => typed::<Vec<BridgeInfo>>(data).map(|v| bridges(&v)),
            ShowWhat::Mac => typed::<Vec<MacEntry>>(data).map(|v| macs(&v)),
            ShowWhat::Xconnect => typed::<Vec<XconnectInfo>>(data).map(|v| xconnects(&v)),
            ShowWhat::Runtime => typed::<RuntimeInfo>(data).map(|v| runtime(&v)),
            ShowWhat::Errors => typed::<Vec<ErrorCount>>(data).map(|v| errors(&v)),
            ShowWhat::Buffers => typed::<PoolStats>(data).map(|v| buffers(&v)),
            ShowWhat::Trace => typed::<Vec<TraceStep>>(data).map(|v| trace(&v)),
            ShowWhat::Config => typed::<Config>(data).and_then(|v| config(&v)),
            ShowWhat::Version => typed::<VersionInfo>(data).map(|v| version(&v)),
            ShowWhat::Feature(word) => crate::sections::SHOWS
                .iter()
                .find(|s| s.word == *word)
                .and_then(|s| (s.render)(data)),
        },
        Request::CaptureStop { .. } => typed::<CaptureInfo>(data).map(|v| capture_stopped(&v)),
        Request::MacFlush { .. } => {
            typed::<Flushed>(data).map(|f| format!("{} learned entries flushed\n", f.flushed))
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
            "loop": {"polls": 100, "idle_polls": 90, "idle_sleeps": 5, "rx_packets": 2560, "busy_ns": 0,
                     "packets_per_s": 0.0, "max_poll_gap_ns": 1000},
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
        let s = render(
            &show(ShowWhat::Mac),
            &serde_json::to_value(&entries).unwrap(),
        );
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[1].contains("02:00:00:00:00:01") && lines[1].contains("static"),
            "{s}"
        );
        assert!(lines[1].ends_with(" -"), "a static entry has no age: {s}");
        assert!(
            lines[2].contains("dynamic") && lines[2].ends_with(" 7"),
            "{s}"
        );
        assert!(s.ends_with("2 entries\n"));
        // A switch of another version answering another shape: printed, not refused.
        let odd = json!([{"mac": "02:00:00:00:00:01"}]);
        let s = render(&show(ShowWhat::Mac), &odd);
        assert!(s.contains("\"mac\": \"02:00:00:00:00:01\""), "{s}");
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
