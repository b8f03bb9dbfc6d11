//! [`AfPacketStats`]: the backend's own counters, beside the generic [`crate::PortStats`].

use serde::Serialize;

/// Counters specific to the AF_PACKET backend. Every frame the port loses is in exactly one of the
/// drop counters (`kernel_drops`, `rx_truncated`, `rx_bad_descriptor`, `rx_no_buffer`,
/// `tx_ring_full`, `tx_too_long`, `tx_kernel_rejected`, `tx_unsent_dropped`, `tx_link_down`,
/// `tx_stalled_dropped`), and also in the
/// generic `rx_dropped` / `tx_dropped`. The kernel's interface counters beside them
/// (`kernel_if_tx_dropped`, `kernel_peer_tx_dropped`) count drops of *copies*: see each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AfPacketStats {
    /// Frames the kernel dropped because the RX ring was full (`tp_drops`).
    pub kernel_drops: u64,
    /// Times the kernel froze the RX queue because no block was free (`tp_freeze_q_cnt`; block
    /// mode only, always 0 in frame mode): the receiver fell behind by the ring's whole depth.
    pub kernel_freeze_q: u64,
    /// Our own transmitted frames seen on RX (`PACKET_OUTGOING`) and skipped.
    pub rx_outgoing_ignored: u64,
    /// Frames the kernel stored shorter than they were (`tp_snaplen < tp_len`): dropped.
    pub rx_truncated: u64,
    /// Descriptors whose offsets or lengths fall outside their block: the rest of the block is dropped.
    pub rx_bad_descriptor: u64,
    /// Frames that found no free pool buffer: dropped.
    pub rx_no_buffer: u64,
    /// Frames received with their L4 checksum left to offload (`TP_STATUS_CSUMNOTREADY`, e.g.
    /// from a veth peer's own stack) whose checksum the port completed in software.
    pub rx_csum_completed: u64,
    /// Such frames the port could not complete (not IPv4/IPv6 + TCP/UDP, fragments, IPv6
    /// extension headers, longer than one buffer): passed on as they are, their checksum
    /// incomplete.
    pub rx_csum_incomplete: u64,
    /// Frames not sent because every TX slot was still in use.
    pub tx_ring_full: u64,
    /// Frames not sent because they are longer than a TX slot or than the MTU allows.
    pub tx_too_long: u64,
    /// Frames the kernel refused to send (`TP_STATUS_WRONG_FORMAT`).
    pub tx_kernel_rejected: u64,
    /// `sendto` kicks that failed with something other than "try again".
    pub tx_kick_errors: u64,
    /// Frames placed in the TX ring and taken back unsent after a kick failed for good (interface
    /// down or gone): dropped.
    pub tx_unsent_dropped: u64,
    /// Frames taken back unsent because the kernel refused the oldest of them at two kicks in a
    /// row while the interface had no carrier (a veth whose peer is down, a NIC without link):
    /// dropped at once, as VPP's `interface-output` drops for a link that is down, instead of
    /// being re-sent at every kick and delivered late, if ever.
    pub tx_link_down: u64,
    /// Frames taken back unsent because the kernel refused the oldest of them at every kick for
    /// `TX_STALL_LIMIT` (100 ms) on a link that is up — e.g. a frame longer than a veth peer's
    /// MTU, which `veth_xmit` drops and `tpacket_snd` puts back each time: dropped, so that the
    /// ring moves on.
    pub tx_stalled_dropped: u64,
    /// Kicks that left frames in the ring for a later kick (`EAGAIN`: socket buffer full;
    /// `ENOBUFS`: the qdisc refused one). Not a loss: the frames go out with a later kick.
    pub tx_deferred_kicks: u64,
    /// Frames in the TX ring now, not yet given back by the kernel (not yet counted as sent).
    pub tx_in_flight: u64,
    /// Times the port re-opened itself on its interface deleted and created again (a new
    /// socket and rings bound to the new device; not a loss).
    pub reopened: u64,
    /// The interface's kernel `tx_dropped` ([`crate::ifstats`]; on veth: the peer's receive
    /// queue — backlog or NAPI ring — was full, or the peer refused the frame). Not a loss of
    /// this port: when `veth_xmit` drops a frame, `tpacket_snd` puts its slot back to
    /// "send request" and the next kick sends it again (`tx-deferred-kicks`), so this counts
    /// attempts. A frame the peer can never take (longer than its MTU) is re-sent at every kick
    /// until it has held the ring for `TX_STALL_LIMIT`, then dropped (`tx_stalled_dropped`; test
    /// `kernel_if_drops`).
    pub kernel_if_tx_dropped: u64,
    /// The veth peer's `tx_dropped` ([`crate::ifstats`]): copies of frames sent toward this
    /// port that the peer could not put into this end's receive queue (with GRO on this end,
    /// its NAPI ring full). Lost, if the sender over there does not re-send them (an AF_XDP
    /// sender or the kernel's stack does not; an AF_PACKET one does). Listed, not added to
    /// `rx_dropped`.
    pub kernel_peer_tx_dropped: u64,
}

impl AfPacketStats {
    /// `(reason, count)` of every counter `show errors` lists (losses and events, not the
    /// `tx_in_flight` gauge), in a fixed order.
    pub fn reasons(&self) -> [(&'static str, u64); 17] {
        [
            ("kernel-ring-full-drops", self.kernel_drops),
            ("kernel-queue-freezes", self.kernel_freeze_q),
            ("rx-truncated", self.rx_truncated),
            ("rx-bad-descriptor", self.rx_bad_descriptor),
            ("rx-no-buffer", self.rx_no_buffer),
            ("rx-checksum-left-incomplete", self.rx_csum_incomplete),
            ("tx-ring-full", self.tx_ring_full),
            ("tx-too-long", self.tx_too_long),
            ("tx-kernel-rejected", self.tx_kernel_rejected),
            ("tx-unsent-dropped", self.tx_unsent_dropped),
            ("tx-link-down", self.tx_link_down),
            ("tx-stalled-dropped", self.tx_stalled_dropped),
            (
                "kernel-interface-tx-dropped-resent",
                self.kernel_if_tx_dropped,
            ),
            ("kernel-peer-tx-dropped", self.kernel_peer_tx_dropped),
            ("tx-kick-errors", self.tx_kick_errors),
            ("tx-deferred-kicks", self.tx_deferred_kicks),
            ("interface-re-opened", self.reopened),
        ]
    }
}
