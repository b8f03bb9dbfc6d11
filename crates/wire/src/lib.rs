//! Packet headers as bytes: zero-copy *views* and small value *reprs*, with no I/O and no `unsafe`.
//!
//! Every header comes in two layers, smoltcp-style:
//! - a view `Xxx<T: AsRef<[u8]>>` over a byte buffer ([`EthernetFrame`], [`VlanTag`],
//!   [`Ipv4Packet`], [`UdpPacket`], …) with field byte ranges in a private `mod field`,
//!   `new_unchecked`, and `new_checked` / `check_len` whose promise is: *after `check_len`
//!   succeeds, no accessor panics*. Getters read fields in network byte order; for
//!   `T: AsMut<[u8]>` setters write them in place (the switch rewrites headers this way).
//! - a repr `XxxRepr` ([`EthernetRepr`], [`VlanRepr`], [`Ipv4Repr`], [`UdpRepr`], …): a plain value
//!   with `parse(&view) -> Result<Repr, Error>` (which checks lengths, versions and checksums) and
//!   `emit(&mut view)`, plus `header_len()` / `buffer_len()`.
//!
//! [`L2Header::parse`] reads an Ethernet frame's addresses, up to two VLAN tags and final EtherType
//! in one pass, as `ethernet-input` needs. [`checksum`] has the Internet checksum, pseudo-header
//! sums and RFC 1624 incremental updates. Every failure is an [`Error`] whose
//! [`Error::reason`] is a stable kebab-case drop-reason name.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checksum;
pub mod error;
pub mod ethernet;
pub mod ip;
pub mod ipv4;
pub mod udp;
pub mod vlan;

pub use error::{Error, Result};
pub use ethernet::{AddressParseError, EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use ip::IpProtocol;
pub use ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
pub use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
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
