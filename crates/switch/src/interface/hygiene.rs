//! Input hygiene at L2: the checks `ethernet-input` makes on every received frame after its L2
//! header parsed, before the frame reaches any service (bridge, cross-connect, routed interface).
//! They belong to the interface layer, not to a feature: they apply to every frame whatever its
//! receive interface's service.
//!
//! | frame | verdict | named |
//! |---|---|---|
//! | shorter than 14 bytes | dropped (by the parser) | `runt` |
//! | 14–59 bytes (below IEEE 802.3's 64-byte minimum less its 4-byte FCS) | **forwarded unchanged** | (counted as any frame, in the port's and interface's rx counters) |
//! | source MAC a group address (I/G bit set, incl. broadcast) | dropped, never learned | `src-mac-multicast` |
//! | source MAC all zeros | dropped, never learned | `src-mac-zero` |
//! | L3 payload (bytes after the L2 header, tags excluded) above the receive interface's MTU | dropped | `over-mtu` |
//!
//! Why these:
//! - A source address is always an individual address (IEEE 802-2014 §8.2: the I/G bit marks the
//!   *destination* as a group; IEEE 802.3 §3.2.3 "the Source Address field ... individual
//!   address"). A group source is malformed or spoofed; learning it would send unicast traffic for
//!   a group to one port. All-zero is not a station's address either; the Linux bridge drops both
//!   (`is_valid_ether_addr` in `br_handle_frame`).
//! - The MTU check at input drops a frame the switch must not carry where it enters, with a reason
//!   that says so, instead of letting it fail later at transmit as `tx-failed` (a bridge does not
//!   fragment: IEEE 802.1Q-2018 §8.5.1). The MTU is the receive interface's (`[[mtu]]`, default
//!   9000); an egress interface with a smaller MTU is `mtu-check`'s job (the `mtu` feature).
//! - Runt policy: software ports carry no PHY and pad nothing. A kernel's ARP request on a veth is
//!   42 bytes, a memif or vhost-user peer may send 14-byte frames; dropping them would break
//!   ARP between namespaces and every peer that does not pad. So 14–59-byte frames are forwarded
//!   as they are (not padded: the switch never rewrites a frame's length), as the Linux bridge
//!   does; they are not an error, so `show errors` does not list them. A port that needs the
//!   minimum on the wire (a NIC) pads in hardware. Below 14 bytes there is no Ethernet header:
//!   `runt`.

use vecswitch_wire::EthernetAddress;

/// Why `ethernet-input` drops a frame whose header parsed (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// The source MAC is a group address (multicast or broadcast).
    SrcMacMulticast,
    /// The source MAC is 00:00:00:00:00:00.
    SrcMacZero,
    /// The L3 payload is longer than the receive interface's MTU.
    OverMtu,
}

/// Checks one frame: its source MAC, its `total_len` bytes of which `l3_offset` are the L2 header
/// (tags included), against the receive interface's `mtu` (bytes of L3 payload). Short frames
/// (14–59 bytes) pass: see the runt policy in the module doc.
#[inline]
pub fn check(src: &EthernetAddress, total_len: u32, l3_offset: usize, mtu: u16) -> Result<(), Bad> {
    let s = &src.0;
    if s[0] & 1 != 0 {
        return Err(Bad::SrcMacMulticast);
    }
    if *s == [0; 6] {
        return Err(Bad::SrcMacZero);
    }
    if total_len.saturating_sub(l3_offset as u32) > mtu as u32 {
        return Err(Bad::OverMtu);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);

    #[test]
    fn source_addresses() {
        for m in [
            [0xff; 6],
            [0x01, 0x00, 0x5e, 0, 0, 1],
            [0x33, 0x33, 0, 0, 0, 1],
            [0x03, 0, 0, 0, 0, 0],
        ] {
            assert_eq!(
                check(&EthernetAddress(m), 60, 14, 1500),
                Err(Bad::SrcMacMulticast),
                "{m:x?}"
            );
        }
        assert_eq!(
            check(&EthernetAddress([0; 6]), 60, 14, 1500),
            Err(Bad::SrcMacZero)
        );
        // Locally administered and universal individual addresses are fine.
        assert_eq!(check(&OK, 60, 14, 1500), Ok(()));
        assert_eq!(
            check(&EthernetAddress([0, 0x1b, 0x21, 1, 2, 3]), 60, 14, 1500),
            Ok(())
        );
    }

    #[test]
    fn mtu_counts_l3_bytes_only() {
        assert_eq!(check(&OK, 1514, 14, 1500), Ok(()));
        assert_eq!(check(&OK, 1515, 14, 1500), Err(Bad::OverMtu));
        // Two tags: 22 bytes of L2 header do not count against the MTU.
        assert_eq!(check(&OK, 1522, 22, 1500), Ok(()));
        assert_eq!(check(&OK, 1523, 22, 1500), Err(Bad::OverMtu));
        assert_eq!(check(&OK, 9014, 14, 9000), Ok(()));
        assert_eq!(check(&OK, 9015, 14, 9000), Err(Bad::OverMtu));
    }

    #[test]
    fn runt_policy_boundaries() {
        for len in [14, 42, 59] {
            assert_eq!(check(&OK, len, 14, 1500), Ok(()), "{len} bytes pass");
        }
    }
}
