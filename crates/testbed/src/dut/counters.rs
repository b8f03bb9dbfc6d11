//! What a device under test says about the frames it handled: [`DeviceCounters`], read from the
//! device's own counters before and after each trial ([`crate::Dut::counters`]), and the
//! difference of two readings, [`DeviceCounters::delta`].
//!
//! The lab splits every trial's loss by where it happened (METHODOLOGY.md, "Where every frame
//! went"): not sent by the tester, refused by the device's receive side, lost inside the device,
//! refused on the way back to the tester. The generator knows the first and the last; the device's
//! own counters say the middle. A device without counters (or one the lab cannot read) gives
//! `None` fields, and the loss they would explain stays "unexplained" in the results, never guessed.

use serde::{Deserialize, Serialize};

/// Cumulative counters of a device, summed over the ports the lab attached (a reading at one
/// instant; subtract two with [`DeviceCounters::delta`]). `None`: the device has no such counter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceCounters {
    /// Frames the device received on the lab's ports.
    pub rx_frames: Option<u64>,
    /// Frames the device transmitted on the lab's ports.
    pub tx_frames: Option<u64>,
    /// Frames dropped at the device's receive side (receive ring full, `rx_missed`, kernel ring
    /// drops of a socket the device reads).
    pub rx_dropped: Option<u64>,
    /// Frames dropped inside the device (drop reasons, datapath drops).
    pub internal_dropped: Option<u64>,
    /// Frames the device failed to transmit toward the tester (transmit ring full, `tx-failed`).
    pub tx_dropped: Option<u64>,
    /// Busy time of the device's forwarding core in CPU clocks (for the device-cost comparison),
    /// where the device reports it.
    pub busy_clocks: Option<u64>,
    /// Idle polls / total polls of a poll-mode device, where it reports them.
    pub idle_polls: Option<u64>,
    pub total_polls: Option<u64>,
    /// The device's worker since the previous reading (long gaps between polls): a driver that
    /// reads it fills it per reading, so the reading after a trial carries the trial's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<vecswitch_lab::DeviceWorker>,
    /// Polls that found a receive ring of the lab's ports full, where the device shows its rings
    /// (vecswitch memif): a refusal with no full ring at any poll was not the ring's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_ring_full_polls: Option<u64>,
}

impl DeviceCounters {
    /// `self − before`, field by field; a field is `Some` only when both readings have it (a
    /// counter that went backwards — the device restarted — gives `None`, not a huge number).
    pub fn delta(&self, before: &DeviceCounters) -> DeviceCounters {
        fn d(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => a.checked_sub(b),
                _ => None,
            }
        }
        DeviceCounters {
            rx_frames: d(self.rx_frames, before.rx_frames),
            tx_frames: d(self.tx_frames, before.tx_frames),
            rx_dropped: d(self.rx_dropped, before.rx_dropped),
            internal_dropped: d(self.internal_dropped, before.internal_dropped),
            tx_dropped: d(self.tx_dropped, before.tx_dropped),
            busy_clocks: d(self.busy_clocks, before.busy_clocks),
            idle_polls: d(self.idle_polls, before.idle_polls),
            total_polls: d(self.total_polls, before.total_polls),
            // Already a window (since the previous reading): the later reading's.
            worker: self.worker,
            rx_ring_full_polls: d(self.rx_ring_full_polls, before.rx_ring_full_polls),
        }
    }
}

/// One port's counters as a driver reads them, before they are summed into [`DeviceCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortCounts {
    pub rx: u64,
    pub tx: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
}

/// Sums per-port counters into [`DeviceCounters`]: ports in `facing` (the device's ends of the
/// generator's links) give received, transmitted, receive-side and transmit-side drops; the
/// device's other ports (the links to a PVP VNF) are inside the device as the lab sees it, so
/// their drops count as internal. `internal` is added to that (drop reasons, datapath drops).
/// `None` when a facing port is missing from `ports` (the device did not report it).
pub fn sum_ports(
    ports: &[(String, PortCounts)],
    facing: &[String],
    internal: Option<u64>,
) -> Option<DeviceCounters> {
    let mut c = DeviceCounters {
        rx_frames: Some(0),
        tx_frames: Some(0),
        rx_dropped: Some(0),
        internal_dropped: internal,
        tx_dropped: Some(0),
        ..Default::default()
    };
    let add = |a: &mut Option<u64>, b: u64| *a = a.map(|a| a + b);
    for f in facing {
        let (_, p) = ports.iter().find(|(n, _)| n == f)?;
        add(&mut c.rx_frames, p.rx);
        add(&mut c.tx_frames, p.tx);
        add(&mut c.rx_dropped, p.rx_dropped);
        add(&mut c.tx_dropped, p.tx_dropped);
    }
    for (n, p) in ports {
        if !facing.contains(n) {
            add(&mut c.internal_dropped, p.rx_dropped + p.tx_dropped);
        }
    }
    Some(c)
}

/// Reads `key=value` or `key: value` pairs in any order (numbers only) from `text`: the shape
/// of OVS's `{rx_packets=1, ...}`, testpmd's `RX-packets: 1` and the external device's counter
/// command (docs/TESTBED.md). Keys keep their case; separators are whitespace and commas.
pub fn numeric_pairs(text: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let cleaned: String = text
        .chars()
        .map(|c| if "{},\"".contains(c) { ' ' } else { c })
        .collect();
    let toks: Vec<&str> = cleaned.split_whitespace().collect();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if let Some((k, v)) = t.split_once('=') {
            if let (false, Ok(v)) = (k.is_empty(), v.parse::<u64>()) {
                out.push((k.to_string(), v));
            }
        } else if let Some(k) = t.strip_suffix(':') {
            if let Some(Ok(v)) = toks.get(i + 1).map(|v| v.parse::<u64>()) {
                out.push((k.to_string(), v));
                i += 1;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_subtracts_and_never_wraps() {
        let before = DeviceCounters {
            rx_frames: Some(10),
            tx_frames: Some(5),
            rx_dropped: None,
            internal_dropped: Some(3),
            tx_dropped: Some(7),
            ..Default::default()
        };
        let after = DeviceCounters {
            rx_frames: Some(110),
            tx_frames: Some(2), // restarted: went backwards
            rx_dropped: Some(4),
            internal_dropped: Some(3),
            tx_dropped: Some(9),
            ..Default::default()
        };
        let d = after.delta(&before);
        assert_eq!(d.rx_frames, Some(100));
        assert_eq!(d.tx_frames, None);
        assert_eq!(d.rx_dropped, None);
        assert_eq!(d.internal_dropped, Some(0));
        assert_eq!(d.tx_dropped, Some(2));
    }

    #[test]
    fn ports_sum_facing_and_count_the_others_as_internal() {
        let p = |rx, tx, rd, td| PortCounts {
            rx,
            tx,
            rx_dropped: rd,
            tx_dropped: td,
        };
        let ports = vec![
            ("phy0".to_string(), p(100, 90, 1, 2)),
            ("phy1".to_string(), p(95, 99, 0, 3)),
            ("vnf0".to_string(), p(5, 6, 7, 8)),
        ];
        let facing = ["phy0".to_string(), "phy1".to_string()];
        let c = sum_ports(&ports, &facing, Some(4)).unwrap();
        assert_eq!(c.rx_frames, Some(195));
        assert_eq!(c.tx_frames, Some(189));
        assert_eq!(c.rx_dropped, Some(1));
        assert_eq!(c.tx_dropped, Some(5));
        assert_eq!(c.internal_dropped, Some(4 + 7 + 8));
        assert!(sum_ports(&ports, &["gen9".to_string()], None).is_none());
    }

    #[test]
    fn numeric_pairs_read_both_shapes() {
        let v = numeric_pairs("{collisions=0, rx_bytes=120, rx_packets=2} RX-packets: 7 x: y");
        assert_eq!(
            v,
            vec![
                ("collisions".to_string(), 0),
                ("rx_bytes".to_string(), 120),
                ("rx_packets".to_string(), 2),
                ("RX-packets".to_string(), 7),
            ]
        );
    }
}
