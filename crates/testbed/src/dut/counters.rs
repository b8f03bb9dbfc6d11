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
        }
    }
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
}
