//! Reading the switch's `ctl --json show` answers for [`super::vecswitch::VecswitchDut`]: each
//! answer's `data` as the switch's own show type ([`answer_data`]), and from it the readiness,
//! port counters, internal drops, ring and worker readings the driver reports.

use vecswitch_graph::ErrorCount;

use crate::dut::counters::PortCounts;
use crate::topology::PortEnd;

/// Whether a `ctl --json show ports` answer (the switch's own [`vecswitch_switch::PortInfo`]s)
/// lists every port of `ports` (af_packet ones link-up; memif and vhost-user links come up when
/// their peer, started later, attaches).
pub fn ports_ready(json: &str, ports: &[PortEnd]) -> bool {
    let Some(list) = answer_data::<Vec<vecswitch_switch::PortInfo>>(json) else {
        return false;
    };
    ports.iter().all(|p| {
        list.iter().any(|e| {
            e.name == p.name()
                && (!matches!(p, PortEnd::Veth { .. }) || e.link == vecswitch_ports::LinkState::Up)
        })
    })
}

/// Event counters that `show errors` lists beside the drop reasons (crates/switch/src/state.rs,
/// `Events::list`): they count things that happened to frames that were still forwarded (a
/// station learned, a replica not made), not frames lost. `interface-output`/`tx-failed` is
/// left out too: those frames are the ports' `tx_dropped`, counted there.
const NOT_INTERNAL_DROPS: &[(&str, &str)] = &[
    ("l2-learn", "learned"),
    ("l2-learn", "station-moves"),
    ("l2-learn", "mac-limit-reached"),
    ("l2-learn", "mac-table-full"),
    ("l2-learn", "static-mac-seen-elsewhere"),
    ("l2-flood", "no-buffers"),
    ("l2-age", "aged-out"),
    // LACPDUs consumed by a bond member (crates/switch/src/bond/bond_input.rs): protocol frames,
    // not the traffic's.
    ("bond-input", "lacpdus"),
    ("interface-output", "tx-failed"),
];

/// Per-port counters from a `ctl --json show ports` answer, read as the switch's own
/// [`vecswitch_switch::PortInfo`].
pub fn parse_ports(json: &str) -> Option<Vec<(String, PortCounts)>> {
    let ports: Vec<vecswitch_switch::PortInfo> = answer_data(json)?;
    Some(
        ports
            .into_iter()
            .map(|p| {
                let st = p.stats;
                let counts = PortCounts {
                    rx: st.rx_packets,
                    tx: st.tx_packets,
                    rx_dropped: st.rx_dropped,
                    tx_dropped: st.tx_dropped,
                };
                (p.name, counts)
            })
            .collect(),
    )
}

/// The `data` of a `ctl --json` answer, read as the switch's own type `T` (a field renamed
/// there fails here, instead of reading as absent).
pub(crate) fn answer_data<T: serde::de::DeserializeOwned>(json: &str) -> Option<T> {
    #[derive(serde::Deserialize)]
    struct Answer<T> {
        data: T,
    }
    serde_json::from_str::<Answer<T>>(json).ok().map(|a| a.data)
}

/// Polls that found a receive ring full, summed over the ports named in `facing`, from a
/// `ctl --json show ports` answer read as the switch's own [`vecswitch_switch::PortInfo`];
/// `None` when no such port shows its ring.
pub fn parse_ring_full_polls(json: &str, facing: &[String]) -> Option<u64> {
    let ports: Vec<vecswitch_switch::PortInfo> = answer_data(json)?;
    let rings: Vec<u64> = ports
        .iter()
        .filter(|p| facing.contains(&p.name))
        .filter_map(|p| p.rx_ring.map(|r| r.full_polls))
        .collect();
    (!rings.is_empty()).then(|| rings.iter().sum())
}

/// Frames dropped inside the switch from a `ctl --json show errors` answer (the switch's own
/// [`ErrorCount`]s): the sum of the graph's drop reasons, without event counters and transmit
/// failures ([`NOT_INTERNAL_DROPS`]) and without the ports' own reasons (nodes `port NAME`):
/// those say why a port's `rx_dropped` / `tx_dropped` of `show ports` grew (crates/ports,
/// `Port::error_counters`), and the lab counts those frames there.
pub fn parse_internal_drops(json: &str) -> Option<u64> {
    let list: Vec<ErrorCount> = answer_data(json)?;
    Some(
        list.iter()
            .filter(|e| !e.node.starts_with("port "))
            .filter(|e| !NOT_INTERNAL_DROPS.contains(&(e.node.as_str(), e.reason.as_str())))
            .map(|e| e.count)
            .sum(),
    )
}

/// `(busy clocks, idle polls, polls)` from a `ctl --json show runtime` answer, read as the
/// switch's own [`vecswitch_switch::RuntimeInfo`]: the poll loop's busy time (`loop.busy_ns`,
/// port I/O included) in clocks of its `clock_hz`.
pub fn parse_runtime(json: &str) -> Option<(u64, u64, u64)> {
    let r: vecswitch_switch::RuntimeInfo = answer_data(json)?;
    let l = r.loop_stats;
    let busy = (l.busy_ns as f64 * r.clock_hz / 1e9).round() as u64;
    Some((busy, l.idle_polls, l.polls))
}

/// The worker's long gaps between polls after `since_ns` (the switch clock of the previous
/// reading; `None`: every gap it kept) from a `ctl --json show runtime` answer, read as the
/// switch's own [`vecswitch_switch::RuntimeInfo`], and the switch clock of this reading.
pub fn parse_worker_window(
    json: &str,
    since_ns: Option<u64>,
) -> Option<(vecswitch_lab::DeviceWorker, u64)> {
    let r: vecswitch_switch::RuntimeInfo = answer_data(json)?;
    let mut w = vecswitch_lab::DeviceWorker::default();
    for g in r
        .long_gaps
        .iter()
        .filter(|g| since_ns.is_none_or(|t| g.at_ns > t))
    {
        w.long_gaps += 1;
        if g.gap_ns > w.longest_gap_ns {
            w.longest_gap_ns = g.gap_ns;
            w.longest_slept_ns = g.slept_ns;
            w.longest_work_ns = g.work_ns;
            w.longest_off_cpu_ns = g.off_cpu_ns;
            w.ring_waiting = g.ring_waiting;
            w.ring_size = g.ring_size;
        }
    }
    Some((w, r.now_ns))
}
