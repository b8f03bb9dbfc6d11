//! ICMP for IPv6 (RFC 4443) and the Neighbor Discovery messages the switch answers (RFC 4861):
//! the view [`Icmpv6Packet`], the message type [`Icmpv6Message`], NDP options ([`NdpOption`],
//! [`NdpOptionsIter`]) and the value [`Icmpv6Repr`] (echo, neighbor solicitation/advertisement, and
//! every other message by type, code and the 4-byte rest of header).
//!
//! The view's buffer is the whole ICMPv6 message (the IPv6 payload). The checksum covers the IPv6
//! pseudo header with next header 58 and the whole message (RFC 4443 §2.3); it is mandatory.
//! To build a message: `Icmpv6Repr::emit`, write any data through `data_mut`, then
//! `fill_checksum(src, dst)`.
//!
//! NDP receivers must also check that the IPv6 hop limit is 255 (RFC 4861 §7.1.1); that field is
//! not in this view, so the caller checks it.

use core::fmt;
use std::net::Ipv6Addr;

use crate::checksum;
use crate::error::{Error, Result};
use crate::ethernet::EthernetAddress;
use crate::field::{be16, be32};
use crate::ip::IpProtocol;

mod field {
    use crate::field::*;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const NDP_FLAGS: usize = 4;
    pub const DATA: Rest = 8..;
    pub const NDP_TARGET: Field = 8..24;
    pub const NDP_OPTIONS: Rest = 24..;
}

/// Length of the ICMPv6 header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::DATA.start;
/// Length of a neighbor solicitation/advertisement without options.
pub const NDP_NS_NA_LEN: usize = field::NDP_OPTIONS.start;

const NA_ROUTER: u8 = 0x80;
const NA_SOLICITED: u8 = 0x40;
const NA_OVERRIDE: u8 = 0x20;

/// An ICMPv6 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Icmpv6Message(pub u8);

impl Icmpv6Message {
    /// Destination unreachable.
    pub const DST_UNREACHABLE: Icmpv6Message = Icmpv6Message(1);
    /// Packet too big.
    pub const PKT_TOO_BIG: Icmpv6Message = Icmpv6Message(2);
    /// Time exceeded.
    pub const TIME_EXCEEDED: Icmpv6Message = Icmpv6Message(3);
    /// Parameter problem.
    pub const PARAM_PROBLEM: Icmpv6Message = Icmpv6Message(4);
    /// Echo request.
    pub const ECHO_REQUEST: Icmpv6Message = Icmpv6Message(128);
    /// Echo reply.
    pub const ECHO_REPLY: Icmpv6Message = Icmpv6Message(129);
    /// Router solicitation (RFC 4861).
    pub const ROUTER_SOLICIT: Icmpv6Message = Icmpv6Message(133);
    /// Router advertisement (RFC 4861).
    pub const ROUTER_ADVERT: Icmpv6Message = Icmpv6Message(134);
    /// Neighbor solicitation (RFC 4861).
    pub const NEIGHBOR_SOLICIT: Icmpv6Message = Icmpv6Message(135);
    /// Neighbor advertisement (RFC 4861).
    pub const NEIGHBOR_ADVERT: Icmpv6Message = Icmpv6Message(136);
    /// Redirect (RFC 4861).
    pub const REDIRECT: Icmpv6Message = Icmpv6Message(137);

    /// True for neighbor solicitation and advertisement (which carry a target address).
    pub const fn is_ns_na(self) -> bool {
        matches!(self.0, 135 | 136)
    }
}

impl fmt::Display for Icmpv6Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = match self.0 {
            1 => "destination-unreachable",
            2 => "packet-too-big",
            3 => "time-exceeded",
            4 => "parameter-problem",
            128 => "echo-request",
            129 => "echo-reply",
            133 => "router-solicitation",
            134 => "router-advertisement",
            135 => "neighbor-solicitation",
            136 => "neighbor-advertisement",
            137 => "redirect",
            n => return write!(f, "type-{n}"),
        };
        f.write_str(n)
    }
}

/// One NDP option (RFC 4861 §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdpOption<'a> {
    /// Type 1: source link-layer address.
    SourceLinkLayerAddr(EthernetAddress),
    /// Type 2: target link-layer address.
    TargetLinkLayerAddr(EthernetAddress),
    /// Any other type (or a link-layer address option too short for a MAC), with its bytes after
    /// type and length.
    Other {
        /// Option type.
        option_type: u8,
        /// Bytes after type and length.
        data: &'a [u8],
    },
}

/// Iterator over NDP options; stops at the end or after the first malformed option (length 0 or
/// running past the message), which it yields as [`Error::BadNdpOption`].
#[derive(Debug, Clone)]
pub struct NdpOptionsIter<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
    done: bool,
}

impl<'a> NdpOptionsIter<'a> {
    /// Iterate over an option area that starts at byte `base` of the message (for error offsets).
    pub fn new(data: &'a [u8], base: usize) -> Self {
        NdpOptionsIter {
            data,
            pos: 0,
            base,
            done: false,
        }
    }
}

impl<'a> Iterator for NdpOptionsIter<'a> {
    type Item = Result<NdpOption<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        let option_type = self.data[at];
        let len = self.data.get(at + 1).copied().unwrap_or(0);
        let end = at + usize::from(len) * 8;
        // RFC 4861 §4.6: length 0 is invalid and the packet must be discarded.
        if len == 0 || end > self.data.len() {
            self.done = true;
            return Some(Err(Error::BadNdpOption {
                option_type,
                len,
                offset: self.base + at,
            }));
        }
        let body = &self.data[at + 2..end];
        self.pos = end;
        let mac = EthernetAddress::from_slice(body);
        Some(Ok(match (option_type, mac) {
            (1, Some(m)) => NdpOption::SourceLinkLayerAddr(m),
            (2, Some(m)) => NdpOption::TargetLinkLayerAddr(m),
            _ => NdpOption::Other {
                option_type,
                data: body,
            },
        }))
    }
}

/// A read/write view of an ICMPv6 message.
#[derive(Debug, Clone)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the 8-byte header fits and, for neighbor solicitation/advertisement, the target
    /// address too (RFC 4861 §7.1.1: at least 24 bytes); after this no accessor panics (as long as
    /// the type is not changed to NS/NA by a setter).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                header: "ICMPv6 header",
                len,
                need: HEADER_LEN,
            });
        }
        if self.msg_type().is_ns_na() && len < NDP_NS_NA_LEN {
            return Err(Error::Truncated {
                header: "NDP message",
                len,
                need: NDP_NS_NA_LEN,
            });
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Message type.
    pub fn msg_type(&self) -> Icmpv6Message {
        Icmpv6Message(self.buffer.as_ref()[field::TYPE])
    }

    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The 4 bytes after the checksum, as a number.
    pub fn rest_of_header(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::REST])
    }

    /// Echo identifier.
    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo sequence number.
    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Data after the 8-byte header.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// Neighbor advertisement flags byte (R 0x80, S 0x40, O 0x20).
    pub fn ndp_flags(&self) -> u8 {
        self.buffer.as_ref()[field::NDP_FLAGS]
    }

    /// Target address of a neighbor solicitation/advertisement, `None` for other types.
    pub fn ndp_target_addr(&self) -> Option<Ipv6Addr> {
        if !self.msg_type().is_ns_na() {
            return None;
        }
        let b: [u8; 16] = self
            .buffer
            .as_ref()
            .get(field::NDP_TARGET)?
            .try_into()
            .ok()?;
        Some(Ipv6Addr::from(b))
    }

    /// Options of a neighbor solicitation/advertisement (empty for other types).
    pub fn ndp_options(&self) -> NdpOptionsIter<'_> {
        let opts = if self.msg_type().is_ns_na() {
            self.buffer.as_ref().get(field::NDP_OPTIONS).unwrap_or(&[])
        } else {
            &[]
        };
        NdpOptionsIter::new(opts, field::NDP_OPTIONS.start)
    }

    fn sum_with_pseudo_header(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> u16 {
        let d = self.buffer.as_ref();
        let ph = checksum::pseudo_header_v6(src, dst, IpProtocol::ICMPV6.0, d.len() as u32);
        checksum::add(ph, checksum::sum(d))
    }

    /// True when the checksum verifies for the given IPv6 addresses.
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        self.sum_with_pseudo_header(src, dst) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Set the message type.
    pub fn set_msg_type(&mut self, v: Icmpv6Message) {
        self.buffer.as_mut()[field::TYPE] = v.0;
    }

    /// Set the code.
    pub fn set_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the rest of header.
    pub fn set_rest_of_header(&mut self, v: u32) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the echo identifier.
    pub fn set_echo_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_IDENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the echo sequence number.
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.buffer.as_mut()[field::ECHO_SEQNO].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the target address of a neighbor solicitation/advertisement.
    ///
    /// # Panics
    /// If the buffer is shorter than 24 bytes.
    pub fn set_ndp_target_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::NDP_TARGET].copy_from_slice(&a.octets());
    }

    /// Mutable data after the 8-byte header.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// Compute and write the checksum for the given IPv6 addresses.
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        self.set_checksum(0);
        let c = !self.sum_with_pseudo_header(src, dst);
        self.set_checksum(c);
    }
}

/// An ICMPv6 message header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv6Repr {
    /// Echo request (type 128, code 0).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Length of the echo data.
        data_len: usize,
    },
    /// Echo reply (type 129, code 0).
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Length of the echo data.
        data_len: usize,
    },
    /// Neighbor solicitation (type 135, code 0; RFC 4861 §4.3). Options other than the source
    /// link-layer address are not kept.
    NeighborSolicit {
        /// The address being resolved.
        target_addr: Ipv6Addr,
        /// Source link-layer address option, if present.
        source_lladdr: Option<EthernetAddress>,
    },
    /// Neighbor advertisement (type 136, code 0; RFC 4861 §4.4). Options other than the target
    /// link-layer address are not kept.
    NeighborAdvert {
        /// Router flag.
        router: bool,
        /// Solicited flag.
        solicited: bool,
        /// Override flag.
        override_flag: bool,
        /// The address advertised.
        target_addr: Ipv6Addr,
        /// Target link-layer address option, if present.
        target_lladdr: Option<EthernetAddress>,
    },
    /// Any other message (or a known one with a non-zero code).
    Other {
        /// Message type.
        msg_type: Icmpv6Message,
        /// Code.
        code: u8,
        /// The 4 bytes after the checksum.
        rest_of_header: u32,
        /// Length of the data after the 8-byte header.
        data_len: usize,
    },
}

impl Icmpv6Repr {
    /// Read a message, checking lengths, NDP options and the checksum for the given addresses.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Icmpv6Packet<T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) -> Result<Self> {
        let r = Self::parse_ignoring_checksum(packet)?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum {
                header: "ICMPv6",
                checksum: packet.checksum(),
            });
        }
        Ok(r)
    }

    /// Read a message, checking lengths and NDP options only.
    pub fn parse_ignoring_checksum<T: AsRef<[u8]>>(packet: &Icmpv6Packet<T>) -> Result<Self> {
        packet.check_len()?;
        let data_len = packet.data().len();
        let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
        let target = packet.ndp_target_addr();
        Ok(match (packet.msg_type(), packet.code(), target) {
            (Icmpv6Message::ECHO_REQUEST, 0, _) => Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data_len,
            },
            (Icmpv6Message::ECHO_REPLY, 0, _) => Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data_len,
            },
            (Icmpv6Message::NEIGHBOR_SOLICIT, 0, Some(target_addr)) => {
                let mut source_lladdr = None;
                for o in packet.ndp_options() {
                    if let NdpOption::SourceLinkLayerAddr(m) = o? {
                        source_lladdr = Some(m);
                    }
                }
                Icmpv6Repr::NeighborSolicit {
                    target_addr,
                    source_lladdr,
                }
            }
            (Icmpv6Message::NEIGHBOR_ADVERT, 0, Some(target_addr)) => {
                let mut target_lladdr = None;
                for o in packet.ndp_options() {
                    if let NdpOption::TargetLinkLayerAddr(m) = o? {
                        target_lladdr = Some(m);
                    }
                }
                let f = packet.ndp_flags();
                Icmpv6Repr::NeighborAdvert {
                    router: f & NA_ROUTER != 0,
                    solicited: f & NA_SOLICITED != 0,
                    override_flag: f & NA_OVERRIDE != 0,
                    target_addr,
                    target_lladdr,
                }
            }
            (msg_type, code, _) => Icmpv6Repr::Other {
                msg_type,
                code,
                rest_of_header: packet.rest_of_header(),
                data_len,
            },
        })
    }

    /// Header length (8).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Whole message length.
    pub const fn buffer_len(&self) -> usize {
        match *self {
            Icmpv6Repr::EchoRequest { data_len, .. }
            | Icmpv6Repr::EchoReply { data_len, .. }
            | Icmpv6Repr::Other { data_len, .. } => HEADER_LEN + data_len,
            Icmpv6Repr::NeighborSolicit {
                source_lladdr: l, ..
            }
            | Icmpv6Repr::NeighborAdvert {
                target_lladdr: l, ..
            } => NDP_NS_NA_LEN + if l.is_some() { 8 } else { 0 },
        }
    }

    /// Write the message header (for NS/NA: flags, target and link-layer option too) with a zero
    /// checksum. Write any data, then call [`Icmpv6Packet::fill_checksum`].
    ///
    /// # Panics
    /// If the packet's buffer is shorter than [`Self::buffer_len`] for NS/NA, or 8 bytes otherwise.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv6Packet<T>) {
        let write_lladdr = |p: &mut Icmpv6Packet<T>, t: u8, m: Option<EthernetAddress>| {
            if let Some(m) = m {
                let o = &mut p.buffer.as_mut()[NDP_NS_NA_LEN..NDP_NS_NA_LEN + 8];
                o[0] = t;
                o[1] = 1;
                o[2..8].copy_from_slice(&m.0);
            }
        };
        match *self {
            Icmpv6Repr::EchoRequest { ident, seq_no, .. } => {
                packet.set_msg_type(Icmpv6Message::ECHO_REQUEST);
                packet.set_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Icmpv6Repr::EchoReply { ident, seq_no, .. } => {
                packet.set_msg_type(Icmpv6Message::ECHO_REPLY);
                packet.set_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Icmpv6Repr::NeighborSolicit {
                target_addr,
                source_lladdr,
            } => {
                packet.set_msg_type(Icmpv6Message::NEIGHBOR_SOLICIT);
                packet.set_code(0);
                packet.set_rest_of_header(0);
                packet.set_ndp_target_addr(target_addr);
                write_lladdr(packet, 1, source_lladdr);
            }
            Icmpv6Repr::NeighborAdvert {
                router,
                solicited,
                override_flag,
                target_addr,
                target_lladdr,
            } => {
                packet.set_msg_type(Icmpv6Message::NEIGHBOR_ADVERT);
                packet.set_code(0);
                let mut f = 0u8;
                if router {
                    f |= NA_ROUTER;
                }
                if solicited {
                    f |= NA_SOLICITED;
                }
                if override_flag {
                    f |= NA_OVERRIDE;
                }
                packet.set_rest_of_header(u32::from(f) << 24);
                packet.set_ndp_target_addr(target_addr);
                write_lladdr(packet, 2, target_lladdr);
            }
            Icmpv6Repr::Other {
                msg_type,
                code,
                rest_of_header,
                ..
            } => {
                packet.set_msg_type(msg_type);
                packet.set_code(code);
                packet.set_rest_of_header(rest_of_header);
            }
        }
        packet.set_checksum(0);
    }
}

impl fmt::Display for Icmpv6Repr {
    /// `icmpv6 echo-request id I seq S len L`, `icmpv6 neighbor-solicitation who-has T[ from MAC]`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data_len,
            } => {
                write!(
                    f,
                    "icmpv6 echo-request id {ident} seq {seq_no} len {data_len}"
                )
            }
            Icmpv6Repr::EchoReply {
                ident,
                seq_no,
                data_len,
            } => {
                write!(
                    f,
                    "icmpv6 echo-reply id {ident} seq {seq_no} len {data_len}"
                )
            }
            Icmpv6Repr::NeighborSolicit {
                target_addr,
                source_lladdr,
            } => {
                write!(f, "icmpv6 neighbor-solicitation who-has {target_addr}")?;
                match source_lladdr {
                    Some(m) => write!(f, " from {m}"),
                    None => Ok(()),
                }
            }
            Icmpv6Repr::NeighborAdvert {
                router,
                solicited,
                override_flag,
                target_addr,
                target_lladdr,
            } => {
                write!(f, "icmpv6 neighbor-advertisement {target_addr}")?;
                if let Some(m) = target_lladdr {
                    write!(f, " is-at {m}")?;
                }
                for (on, name) in [
                    (router, " router"),
                    (solicited, " solicited"),
                    (override_flag, " override"),
                ] {
                    if on {
                        f.write_str(name)?;
                    }
                }
                Ok(())
            }
            Icmpv6Repr::Other {
                msg_type,
                code,
                data_len,
                ..
            } => write!(f, "icmpv6 {msg_type} code {code} len {data_len}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn src() -> Ipv6Addr {
        "fe80::1".parse().unwrap()
    }
    fn dst() -> Ipv6Addr {
        "fe80::2".parse().unwrap()
    }

    /// Independent checksum: the RFC 8200 §8.1 pseudo header laid out as bytes.
    fn reference_checksum(s: Ipv6Addr, d: Ipv6Addr, msg: &[u8]) -> u16 {
        let mut b = Vec::new();
        b.extend_from_slice(&s.octets());
        b.extend_from_slice(&d.octets());
        b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 58]);
        b.extend_from_slice(msg);
        checksum::checksum(&b)
    }

    fn echo_bytes() -> Vec<u8> {
        let mut b = vec![128, 0, 0, 0, 0xbe, 0xef, 0x00, 0x07, 1, 2, 3];
        let c = reference_checksum(src(), dst(), &b);
        b[2..4].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn echo_round_trip() {
        let b = echo_bytes();
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        let r = Icmpv6Repr::parse(&p, &src(), &dst()).unwrap();
        assert_eq!(
            r,
            Icmpv6Repr::EchoRequest {
                ident: 0xbeef,
                seq_no: 7,
                data_len: 3
            }
        );
        let mut out = vec![0u8; r.buffer_len()];
        let mut q = Icmpv6Packet::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.data_mut().copy_from_slice(&[1, 2, 3]);
        q.fill_checksum(&src(), &dst());
        assert_eq!(out, b);
    }

    #[test]
    fn checksum_depends_on_pseudo_header() {
        let b = echo_bytes();
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum(&src(), &dst()));
        assert!(!p.verify_checksum(&src(), &"fe80::3".parse().unwrap()));
        assert_eq!(
            Icmpv6Repr::parse(&p, &"fe80::3".parse().unwrap(), &dst()).unwrap_err(),
            Error::BadChecksum {
                header: "ICMPv6",
                checksum: p.checksum()
            }
        );
    }

    /// Neighbor solicitation for 2001:db8::2 from 02:00:00:00:00:01 (RFC 4861 §4.3 layout).
    fn ns_bytes() -> Vec<u8> {
        let mut b = vec![135, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&[1, 1, 0x02, 0, 0, 0, 0, 0x01]);
        let c = reference_checksum(src(), "ff02::1:ff00:2".parse().unwrap(), &b);
        b[2..4].copy_from_slice(&c.to_be_bytes());
        b
    }

    #[test]
    fn neighbor_solicit_round_trip() {
        let d: Ipv6Addr = "ff02::1:ff00:2".parse().unwrap();
        let b = ns_bytes();
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        let r = Icmpv6Repr::parse(&p, &src(), &d).unwrap();
        let expect = Icmpv6Repr::NeighborSolicit {
            target_addr: "2001:db8::2".parse().unwrap(),
            source_lladdr: Some(EthernetAddress([2, 0, 0, 0, 0, 1])),
        };
        assert_eq!(r, expect);
        assert_eq!(r.buffer_len(), 32);
        let mut out = vec![0xffu8; 32];
        let mut q = Icmpv6Packet::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.fill_checksum(&src(), &d);
        assert_eq!(out, b);
    }

    #[test]
    fn neighbor_advert_round_trip() {
        let r = Icmpv6Repr::NeighborAdvert {
            router: false,
            solicited: true,
            override_flag: true,
            target_addr: "2001:db8::2".parse().unwrap(),
            target_lladdr: Some(EthernetAddress([2, 0, 0, 0, 0, 2])),
        };
        let mut out = vec![0u8; r.buffer_len()];
        let mut q = Icmpv6Packet::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.fill_checksum(&dst(), &src());
        assert_eq!(out[4], 0x60, "S and O flags");
        assert_eq!(&out[24..26], &[2, 1], "target link-layer option, 1 unit");
        assert_eq!(
            reference_checksum(dst(), src(), &{
                let mut z = out.clone();
                z[2] = 0;
                z[3] = 0;
                z
            }),
            u16::from_be_bytes([out[2], out[3]])
        );
        let p = Icmpv6Packet::new_checked(&out[..]).unwrap();
        assert_eq!(Icmpv6Repr::parse(&p, &dst(), &src()).unwrap(), r);
        // Without the option.
        let r2 = Icmpv6Repr::NeighborAdvert {
            router: true,
            solicited: false,
            override_flag: false,
            target_addr: "::1".parse().unwrap(),
            target_lladdr: None,
        };
        let mut out = vec![0u8; r2.buffer_len()];
        r2.emit(&mut Icmpv6Packet::new_unchecked(&mut out[..]));
        assert_eq!(
            Icmpv6Repr::parse_ignoring_checksum(&Icmpv6Packet::new_checked(&out[..]).unwrap())
                .unwrap(),
            r2
        );
    }

    #[test]
    fn errors() {
        let b = echo_bytes();
        assert_eq!(
            Icmpv6Packet::new_checked(&b[..7]).unwrap_err(),
            Error::Truncated {
                header: "ICMPv6 header",
                len: 7,
                need: 8
            }
        );
        let b = ns_bytes();
        assert_eq!(
            Icmpv6Packet::new_checked(&b[..23]).unwrap_err(),
            Error::Truncated {
                header: "NDP message",
                len: 23,
                need: 24
            }
        );
        // Zero-length option.
        let mut b = ns_bytes();
        b[25] = 0;
        assert_eq!(
            Icmpv6Repr::parse_ignoring_checksum(&Icmpv6Packet::new_checked(&b[..]).unwrap())
                .unwrap_err(),
            Error::BadNdpOption {
                option_type: 1,
                len: 0,
                offset: 24
            }
        );
        // Option running past the end.
        b[25] = 2;
        assert_eq!(
            Icmpv6Repr::parse_ignoring_checksum(&Icmpv6Packet::new_checked(&b[..]).unwrap())
                .unwrap_err()
                .reason(),
            "bad-ndp-option"
        );
    }

    #[test]
    fn unknown_options_and_codes() {
        // An unknown option (type 14, nonce) is skipped; NS with code 1 is "Other".
        let mut b = ns_bytes();
        b.extend_from_slice(&[14, 1, 9, 9, 9, 9, 9, 9]);
        let p = Icmpv6Packet::new_checked(&b[..]).unwrap();
        let opts: Vec<_> = p.ndp_options().map(|o| o.unwrap()).collect();
        assert_eq!(
            opts[1],
            NdpOption::Other {
                option_type: 14,
                data: &[9; 6]
            }
        );
        assert!(matches!(
            Icmpv6Repr::parse_ignoring_checksum(&p).unwrap(),
            Icmpv6Repr::NeighborSolicit { .. }
        ));
        b[1] = 1;
        assert!(matches!(
            Icmpv6Repr::parse_ignoring_checksum(&Icmpv6Packet::new_checked(&b[..]).unwrap())
                .unwrap(),
            Icmpv6Repr::Other { code: 1, .. }
        ));
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64), ns in any::<bool>()) {
            let mut data = data;
            if ns && !data.is_empty() {
                data[0] = 135;
            }
            let p = Icmpv6Packet::new_unchecked(&data[..]);
            if p.check_len().is_ok() {
                let _ = (p.data(), p.ndp_target_addr(), p.ndp_options().count());
            }
            if let Ok(r) = Icmpv6Repr::parse_ignoring_checksum(&p) {
                prop_assert!(r.buffer_len() <= data.len());
            }
            let _ = Icmpv6Repr::parse(&p, &src(), &dst());
        }
    }
}
