//! The switch's own shows — ports, interfaces, runtime, errors, buffers, trace — registered like a
//! feature's ([`SHOWS`]), with their tables. (Bridge-domains, MACs and cross-connects are the L2
//! feature's: `crate::l2::ctl`.)

use serde_json::Value;
use vecswitch_buffer::PoolStats;
use vecswitch_graph::{ErrorCount, TraceStep};
use vecswitch_ports::LinkState;

use super::table::{Align, Table};
use super::{json, typed, Show};
use crate::interface::InterfaceKind;
use crate::{InterfaceInfo, PortInfo, RuntimeInfo, ServiceInfo};

use Align::{Left as L, Right as R};

/// The switch's own shows, in help order.
pub const SHOWS: &[Show] = &[
    Show {
        word: "ports",
        aliases: &["port"],
        args: &[],
        help: "ports: admin and link state, service, RX/TX packets, bytes and drops, capture, backend",
        run: |sw, _| json("ports", sw.show_ports()),
        render: |v| typed::<Vec<PortInfo>>(v).map(|p| ports(&p)),
    },
    Show {
        word: "interfaces",
        aliases: &["interface", "int"],
        args: &[],
        help: "interfaces: kind, admin state, MAC, MTU, RX/TX packets and bytes, input/output features",
        run: |sw, _| json("interfaces", sw.show_interfaces()),
        render: |v| typed::<Vec<InterfaceInfo>>(v).map(|i| interfaces(&i)),
    },
    Show {
        word: "runtime",
        aliases: &[],
        args: &[],
        help: "poll loop and per-node calls, vectors, packets, drops, clocks/packet",
        run: |sw, _| json("runtime", sw.show_runtime()),
        render: |v| typed::<RuntimeInfo>(v).map(|r| runtime(&r)),
    },
    Show {
        word: "errors",
        aliases: &["error"],
        args: &[],
        help: "drop reasons and node counters, per node",
        run: |sw, _| json("errors", sw.show_errors()),
        render: |v| typed::<Vec<ErrorCount>>(v).map(|e| errors(&e)),
    },
    Show {
        word: "buffers",
        aliases: &[],
        args: &[],
        help: "buffer pool: total, free, in use, double frees, allocation failures",
        run: |sw, _| json("buffers", sw.show_buffers()),
        render: |v| typed::<PoolStats>(v).map(|b| buffers(&b)),
    },
    Show {
        word: "trace",
        aliases: &[],
        args: &[],
        help: "the packets traced since `trace add N`, node by node",
        run: |sw, _| json("trace", sw.show_trace()),
        render: |v| typed::<Vec<TraceStep>>(v).map(|t| trace(&t)),
    },
];

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
        ("RX ring peak", R),
        ("Capture", L),
        ("Backend", L),
    ]);
    for p in ps {
        let capture = match &p.capture {
            Some(c) => format!(
                "{} {}{}{}",
                c.path,
                c.captured,
                if c.dropped > 0 {
                    format!(" ({} dropped: writer behind)", c.dropped)
                } else {
                    String::new()
                },
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
            match p.rx_ring {
                Some(r) => format!("{}/{}", r.peak, r.size),
                None => "-".into(),
            },
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

/// `show interfaces`.
fn interfaces(is: &[InterfaceInfo]) -> String {
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

/// The poll-gap histogram as `<1µs 812, 1µs 4…` — each non-empty bucket by its lower bound.
fn poll_gaps(h: &[u64]) -> String {
    let label = |ns: u64| match ns {
        0 => "<1us".to_string(),
        n if n < 1_000_000 => format!(">={}us", n / 1000),
        n => format!(">={:.1}ms", n as f64 / 1e6),
    };
    let parts: Vec<String> = h
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(i, c)| format!("{} {c}", label(crate::runtime::poll_gap_bucket_floor_ns(i))))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn runtime(r: &RuntimeInfo) -> String {
    let l = &r.loop_stats;
    let mut out = format!(
        "Poll loop: {} polls, {} idle, {} idle sleeps ({} waiting on the ports, {} of them woken), {} real-time breaks, {} packets received, {:.2} packets/s, longest gap between polls {} ns\n",
        l.polls, l.idle_polls, l.idle_sleeps, l.idle_waits, l.idle_wakes, l.rt_breaks, l.rx_packets, l.packets_per_s, l.max_poll_gap_ns,
    );
    out.push_str(&format!(
        "Longest stall {} ns (of it off CPU at most {} ns); longest rx {} ns, graph {} ns, port control {} ns, aging {} ns, timers {} ns, control call {} ns\n",
        l.max_stall_ns, l.max_off_cpu_ns, l.max_rx_ns, l.max_graph_ns, l.max_port_control_ns,
        l.max_aging_ns, l.max_timers_ns, l.max_control_call_ns,
    ));
    out.push_str(&format!("Poll gaps: {}\n", poll_gaps(&l.poll_gaps)));
    if l.long_gaps > 0 {
        out.push_str(&format!(
            "Long gaps (>= {} us): {}; latest {} (ms ago: gap, slept, work, off CPU, fullest rx ring):\n",
            crate::runtime::LONG_GAP_NS / 1000,
            l.long_gaps,
            r.long_gaps.len()
        ));
        for g in r.long_gaps.iter().rev().take(8) {
            out.push_str(&format!(
                "  {:.1} ms ago: {} us, slept {} us, work {} us, off CPU {} us, ring {}/{}\n",
                r.now_ns.saturating_sub(g.at_ns) as f64 / 1e6,
                g.gap_ns / 1000,
                g.slept_ns / 1000,
                g.work_ns / 1000,
                g.off_cpu_ns / 1000,
                g.ring_waiting,
                g.ring_size
            ));
        }
    }
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
