//! Packet headers as bytes: zero-copy *views* and small value *reprs*, with no I/O and no `unsafe`.
//!
//! Every header comes in two layers, smoltcp-style:
//! - a view `Xxx<T: AsRef<[u8]>>` over a byte buffer ([`EthernetFrame`], [`VlanTag`],
//!   [`ArpPacket`], [`Ipv4Packet`], [`Ipv6Packet`], [`Icmpv4Packet`], [`Icmpv6Packet`],
//!   [`UdpPacket`], [`TcpPacket`]) with field byte ranges in a private `mod field`,
//!   `new_unchecked`, and `new_checked` / `check_len` whose promise is: *after `check_len`
//!   succeeds, no accessor panics*. Getters read fields in network byte order; for
//!   `T: AsMut<[u8]>` setters write them in place (the switch rewrites headers this way).
//! - a repr `XxxRepr` ([`EthernetRepr`], [`VlanRepr`], [`ArpRepr`], [`Ipv4Repr`], [`Ipv6Repr`],
//!   [`Icmpv4Repr`], [`Icmpv6Repr`], [`UdpRepr`], [`TcpRepr`]): a plain value
//!   with `parse(&view) -> Result<Repr, Error>` (which checks lengths, versions and checksums) and
//!   `emit(&mut view)`, plus `header_len()` / `buffer_len()`.
//!
//! [`L2Header::parse`] reads an Ethernet frame's addresses, up to two VLAN tags and final EtherType
//! in one pass, as `ethernet-input` needs. [`checksum`] has the Internet checksum, pseudo-header
//! sums and RFC 1624 incremental updates.
//!
//! Layers do not reach into each other: the caller slices (e.g. an IPv4 view's `payload()` is the
//! buffer of the UDP view) and passes the addresses that L4 checksums need. Checksums over L4
//! payloads are filled after the payload is written: `repr.emit(&mut view)`, write the payload,
//! `view.fill_checksum(..)`. Every failure is an [`Error`] whose [`Error::reason`] is a stable
//! kebab-case drop-reason name ([`Error::REASONS`] lists them all).
//!
//! ```
//! use vecswitch_wire::*;
//!
//! // Build a VLAN-tagged IPv4/UDP frame...
//! let ip = Ipv4Repr::new(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), IpProtocol::UDP, 8 + 4);
//! let udp = UdpRepr { src_port: 1024, dst_port: 7, payload_len: 4 };
//! let mut frame = vec![0u8; 18 + ip.buffer_len()];
//! let l2 = L2Header {
//!     dst_addr: "02:00:00:00:00:02".parse().unwrap(),
//!     src_addr: "02:00:00:00:00:01".parse().unwrap(),
//!     outer: Some(L2Tag { tpid: EtherType::VLAN, pcp: 0, dei: false, vid: 100 }),
//!     inner: None,
//!     ethertype: EtherType::IPV4,
//!     l3_offset: 18,
//! };
//! l2.emit(&mut frame).unwrap();
//! let mut ip_view = Ipv4Packet::new_unchecked(&mut frame[18..]);
//! ip.emit(&mut ip_view);
//! let mut udp_view = UdpPacket::new_unchecked(ip_view.payload_mut());
//! udp.emit(&mut udp_view);
//! udp_view.payload_mut().copy_from_slice(b"ping");
//! udp_view.fill_checksum(&ip.src_addr.into(), &ip.dst_addr.into());
//!
//! // ...and read it back, layer by layer; every step checks before it trusts.
//! let l2 = L2Header::parse(&frame).unwrap();
//! assert_eq!((l2.outer_vid(), l2.ethertype), (Some(100), EtherType::IPV4));
//! let ip_view = Ipv4Packet::new_checked(&frame[l2.l3_offset..]).unwrap();
//! let ip = Ipv4Repr::parse(&ip_view).unwrap();
//! let udp_view = UdpPacket::new_checked(ip_view.payload()).unwrap();
//! let udp = UdpRepr::parse(&udp_view, &ip.src_addr.into(), &ip.dst_addr.into()).unwrap();
//! assert_eq!((udp.dst_port, udp_view.payload()), (7, &b"ping"[..]));
//!
//! // A malformed frame is an error with a drop-reason name, never a panic.
//! assert_eq!(L2Header::parse(&frame[..10]).unwrap_err().reason(), "runt");
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arp;
pub mod checksum;
pub mod error;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod ip;
pub mod ipv4;
pub mod ipv6;
pub mod options;
pub mod tcp;
pub mod udp;
pub mod vlan;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use error::{Error, Result};
pub use ethernet::{AddressParseError, EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use icmpv4::{Icmpv4Message, Icmpv4Packet, Icmpv4Repr};
pub use icmpv6::{Icmpv6Message, Icmpv6Packet, Icmpv6Repr, NdpOption};
pub use ip::IpProtocol;
pub use ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Fragment, Ipv6Packet, Ipv6Repr, Ipv6Upper};
pub use options::OptionBytes;
pub use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
pub use tcp::{TcpFlags, TcpOption, TcpOptions, TcpPacket, TcpRepr};
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{L2Header, L2Tag, VlanRepr, VlanTag};

/// Byte-range helpers shared by the headers' private `field` modules.
mod field {
    /// A field's byte range.
    pub type Field = core::ops::Range<usize>;
    /// From a byte to the end of the buffer.
    pub type Rest = core::ops::RangeFrom<usize>;

    /// Big-endian u16 from the first two bytes.
    #[inline]
    pub fn be16(b: &[u8]) -> u16 {
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Big-endian u32 from the first four bytes.
    #[inline]
    pub fn be32(b: &[u8]) -> u32 {
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
}
