//! Finding the signature in a received frame: [`find_signature`] walks Ethernet, up to two VLAN tags,
//! IPv4 (first fragment or unfragmented) or IPv6 (no extension headers), UDP, and reads the
//! signature at the start of the UDP payload. Every header is length-checked by the `wire` views
//! before it is read; anything else is [`RxError`] (a named reason, never a panic). The receiver does
//! not trust a fixed offset, so frames whose tags a DUT pushed or popped are still recognised.

use vecswitch_wire::{EtherType, IpProtocol, Ipv4Packet, Ipv6Packet, L2Header, UdpPacket};

use crate::signature::{self, Signature};

/// Why a frame carries no signature (it is counted as foreign).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxError {
    /// The L2 header could not be read (runt, truncated tag, bad length).
    BadL2,
    /// Not IPv4 or IPv6 after the tags.
    NotIp,
    /// The IP header failed its length checks.
    BadIp,
    /// A non-first IPv4 fragment (no UDP header in it).
    Fragment,
    /// Not UDP.
    NotUdp,
    /// UDP header failed its length checks.
    BadUdp,
    /// No signature magic in the UDP payload.
    NoSignature,
}

impl RxError {
    /// The reason's name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            RxError::BadL2 => "bad-l2",
            RxError::NotIp => "not-ip",
            RxError::BadIp => "bad-ip",
            RxError::Fragment => "ip-fragment",
            RxError::NotUdp => "not-udp",
            RxError::BadUdp => "bad-udp",
            RxError::NoSignature => "no-signature",
        }
    }
}

/// Reads the generator's signature from a received frame (bytes on the link, no FCS).
pub fn find_signature(frame: &[u8]) -> Result<Signature, RxError> {
    let l2 = L2Header::parse(frame).map_err(|_| RxError::BadL2)?;
    let l3 = &frame[l2.l3_offset..];
    let udp_bytes = match l2.ethertype {
        EtherType::IPV4 => {
            let ip = Ipv4Packet::new_checked(l3).map_err(|_| RxError::BadIp)?;
            if ip.version() != 4 {
                return Err(RxError::BadIp);
            }
            if ip.frag_offset() != 0 {
                return Err(RxError::Fragment);
            }
            if ip.protocol() != IpProtocol::UDP {
                return Err(RxError::NotUdp);
            }
            &l3[ip.header_len()..ip.total_len() as usize]
        }
        EtherType::IPV6 => {
            let ip = Ipv6Packet::new_checked(l3).map_err(|_| RxError::BadIp)?;
            if ip.version() != 6 {
                return Err(RxError::BadIp);
            }
            if ip.next_header() != IpProtocol::UDP {
                return Err(RxError::NotUdp);
            }
            &l3[vecswitch_wire::ipv6::HEADER_LEN
                ..vecswitch_wire::ipv6::HEADER_LEN + ip.payload_len() as usize]
        }
        _ => return Err(RxError::NotIp),
    };
    let udp = UdpPacket::new_checked(udp_bytes).map_err(|_| RxError::BadUdp)?;
    signature::read(udp.payload()).ok_or(RxError::NoSignature)
}
