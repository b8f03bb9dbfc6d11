//! IPv6 fixed header (RFC 8200 §3): the view [`Ipv6Packet`] and the value [`Ipv6Repr`].
//!
//! `next_header` names the first extension header (if any) and `payload()` starts right after the
//! fixed header; [`Ipv6Packet::upper_layer`] walks the extension headers (RFC 8200 §4) to the
//! upper-layer protocol and its offset, noting a fragment header ([`Ipv6Fragment`]). A payload
//! length of 0 is taken literally (jumbograms, RFC 2675, are not supported).

use std::net::Ipv6Addr;

use crate::error::{Error, Result};
use crate::field::{be16, be32};
use crate::ip::IpProtocol;

mod field {
    use crate::field::*;
    pub const VER_TC_FLOW: Field = 0..4;
    pub const PAYLOAD_LEN: Field = 4..6;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
    pub const PAYLOAD: Rest = 40..;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the fixed header and the announced payload fit; after this no accessor panics.
    /// Bytes beyond the payload length (Ethernet padding) are ignored.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                header: "IPv6 header",
                len,
                need: HEADER_LEN,
            });
        }
        let payload_len = self.payload_len();
        if usize::from(payload_len) > len - HEADER_LEN {
            return Err(Error::BadPayloadLength {
                payload_len,
                available: len - HEADER_LEN,
            });
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word0(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::VER_TC_FLOW])
    }

    /// Version nibble (6).
    pub fn version(&self) -> u8 {
        (self.word0() >> 28) as u8
    }

    /// Traffic class (DSCP << 2 | ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.word0() >> 20) as u8
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.word0() & 0x000f_ffff
    }

    /// Payload length (everything after the fixed header, extension headers included).
    pub fn payload_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::PAYLOAD_LEN])
    }

    /// Next header.
    pub fn next_header(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::NEXT_HEADER])
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv6Addr::from(a)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv6Addr::from(a)
    }

    /// The payload, up to the payload length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }

    /// Walk the extension headers (hop-by-hop, routing, fragment, destination options, AH,
    /// mobility, HIP, shim6 — RFC 8200 §4, RFC 7045) to the upper-layer protocol. Stops at the
    /// first other next-header value (ESP and "no next header" included). Needs
    /// [`Self::check_len`] to have passed; a header running past the payload is
    /// [`Error::Truncated`].
    pub fn upper_layer(&self) -> Result<Ipv6Upper> {
        let payload = self.payload();
        let mut proto = self.next_header();
        let mut at = 0usize;
        let mut fragment = None;
        loop {
            let len = match proto.0 {
                // Hop-by-hop, routing, destination options, mobility, HIP, shim6: length in
                // 8-octet units, not counting the first 8 (RFC 8200 §4.3–4.6).
                0 | 43 | 60 | 135 | 139 | 140 => {
                    let Some(&l) = payload.get(at + 1) else {
                        return Err(Error::Truncated {
                            header: "IPv6 extension header",
                            len: payload.len(),
                            need: at + 2,
                        });
                    };
                    (usize::from(l) + 1) * 8
                }
                // Fragment header: 8 bytes (RFC 8200 §4.5).
                44 => 8,
                // Authentication header: length in 4-octet units minus 2 (RFC 4302 §2.2).
                51 => {
                    let Some(&l) = payload.get(at + 1) else {
                        return Err(Error::Truncated {
                            header: "IPv6 extension header",
                            len: payload.len(),
                            need: at + 2,
                        });
                    };
                    (usize::from(l) + 2) * 4
                }
                _ => {
                    return Ok(Ipv6Upper {
                        protocol: proto,
                        offset: HEADER_LEN + at,
                        fragment,
                    })
                }
            };
            let Some(h) = payload.get(at..at + len) else {
                return Err(Error::Truncated {
                    header: "IPv6 extension header",
                    len: payload.len(),
                    need: at + len,
                });
            };
            if proto == IpProtocol::IPV6_FRAG {
                let off_flags = be16(&h[2..4]);
                fragment = Some(Ipv6Fragment {
                    offset: off_flags & 0xfff8,
                    more_frags: off_flags & 1 != 0,
                    ident: be32(&h[4..8]),
                });
            }
            proto = IpProtocol(h[0]);
            at += len;
        }
    }
}

/// Where an IPv6 packet's upper layer starts, from [`Ipv6Packet::upper_layer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Upper {
    /// The upper-layer protocol (or the next header the walk stopped at, e.g. ESP or 59).
    pub protocol: IpProtocol,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// The fragment header, if the packet has one (then only the first fragment, offset 0, holds
    /// the upper-layer header).
    pub fragment: Option<Ipv6Fragment>,
}

/// The fields of an IPv6 fragment header (RFC 8200 §4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Fragment {
    /// Fragment offset in bytes (a multiple of 8).
    pub offset: u16,
    /// More-fragments flag.
    pub more_frags: bool,
    /// Identification.
    pub ident: u32,
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    fn set_word0(&mut self, v: u32) {
        self.buffer.as_mut()[field::VER_TC_FLOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the version nibble.
    pub fn set_version(&mut self, v: u8) {
        let w = (self.word0() & 0x0fff_ffff) | (u32::from(v & 0x0f) << 28);
        self.set_word0(w);
    }

    /// Set the traffic class.
    pub fn set_traffic_class(&mut self, v: u8) {
        let w = (self.word0() & 0xf00f_ffff) | (u32::from(v) << 20);
        self.set_word0(w);
    }

    /// Set the flow label (low 20 bits used).
    pub fn set_flow_label(&mut self, v: u32) {
        let w = (self.word0() & 0xfff0_0000) | (v & 0x000f_ffff);
        self.set_word0(w);
    }

    /// Set the payload length.
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::PAYLOAD_LEN].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the next header.
    pub fn set_next_header(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::NEXT_HEADER] = v.0;
    }

    /// Set the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }

    /// Decrement the hop limit (no checksum in IPv6); returns the new value, 0 stays 0.
    pub fn decrement_hop_limit(&mut self) -> u8 {
        let h = self.hop_limit().saturating_sub(1);
        self.set_hop_limit(h);
        h
    }

    /// Set the source address.
    pub fn set_src_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    /// Set the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv6Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Mutable payload, up to the payload length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// An IPv6 fixed header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Repr {
    /// Source address.
    pub src_addr: Ipv6Addr,
    /// Destination address.
    pub dst_addr: Ipv6Addr,
    /// Next header.
    pub next_header: IpProtocol,
    /// Payload length.
    pub payload_len: usize,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Flow label (20 bits).
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// A header with hop limit 64, traffic class and flow label 0.
    pub fn new(
        src_addr: Ipv6Addr,
        dst_addr: Ipv6Addr,
        next_header: IpProtocol,
        payload_len: usize,
    ) -> Self {
        Ipv6Repr {
            src_addr,
            dst_addr,
            next_header,
            payload_len,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
    }

    /// Read and validate a fixed header: lengths and version 6.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv6Packet<T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 6 {
            return Err(Error::BadVersion {
                version: packet.version(),
                expected: 6,
            });
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: usize::from(packet.payload_len()),
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Fixed header length (40).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write the fixed header (the payload is the caller's).
    ///
    /// # Panics
    /// If the packet's buffer is shorter than 40 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv6Packet<T>) {
        packet.set_word0(
            0x6000_0000 | (u32::from(self.traffic_class) << 20) | (self.flow_label & 0x000f_ffff),
        );
        packet.set_payload_len(self.payload_len.min(usize::from(u16::MAX)) as u16);
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

impl core::fmt::Display for Ipv6Repr {
    /// `ipv6 SRC > DST NEXT hlim H len L`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ipv6 {} > {} {} hlim {} len {}",
            self.src_addr, self.dst_addr, self.next_header, self.hop_limit, self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn known() -> Vec<u8> {
        let mut b = vec![
            0x6b, 0x81, 0x23, 0x45, // version 6, TC 0xb8, flow 0x12345
            0x00, 0x04, 0x11, 0x40, // payload 4, UDP, hop limit 64
        ];
        b.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&"ff02::1:ff00:2".parse::<Ipv6Addr>().unwrap().octets());
        b.extend_from_slice(&[1, 2, 3, 4]);
        b
    }

    fn repr() -> Ipv6Repr {
        Ipv6Repr {
            traffic_class: 0xb8,
            flow_label: 0x12345,
            ..Ipv6Repr::new(
                "2001:db8::1".parse().unwrap(),
                "ff02::1:ff00:2".parse().unwrap(),
                IpProtocol::UDP,
                4,
            )
        }
    }

    #[test]
    fn parse_known_bytes() {
        let b = known();
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.traffic_class(), p.flow_label()),
            (6, 0xb8, 0x12345)
        );
        assert_eq!(p.payload(), &[1, 2, 3, 4]);
        assert_eq!(Ipv6Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn emit_gives_same_bytes() {
        let mut b = vec![0u8; 44];
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        repr().emit(&mut p);
        p.payload_mut().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(b, known());
    }

    #[test]
    fn padding_is_ignored() {
        let mut b = known();
        b.extend_from_slice(&[0; 10]);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).unwrap().payload(),
            &[1, 2, 3, 4]
        );
    }

    #[test]
    fn errors() {
        let b = known();
        assert_eq!(
            Ipv6Packet::new_checked(&b[..39]).unwrap_err(),
            Error::Truncated {
                header: "IPv6 header",
                len: 39,
                need: 40
            }
        );
        assert_eq!(
            Ipv6Packet::new_checked(&b[..43]).unwrap_err(),
            Error::BadPayloadLength {
                payload_len: 4,
                available: 3
            }
        );
        let mut b = known();
        b[0] = 0x4b;
        assert_eq!(
            Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&b[..])).unwrap_err(),
            Error::BadVersion {
                version: 4,
                expected: 6
            }
        );
    }

    fn with_payload(next: u8, payload: &[u8]) -> Vec<u8> {
        let r = Ipv6Repr::new(
            Ipv6Addr::LOCALHOST,
            Ipv6Addr::LOCALHOST,
            IpProtocol(next),
            payload.len(),
        );
        let mut b = vec![0u8; r.buffer_len()];
        let mut p = Ipv6Packet::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        p.payload_mut().copy_from_slice(payload);
        b
    }

    #[test]
    fn upper_layer_walks_extension_headers() {
        // No extension headers.
        let b = known();
        let u = Ipv6Packet::new_checked(&b[..])
            .unwrap()
            .upper_layer()
            .unwrap();
        assert_eq!(
            u,
            Ipv6Upper {
                protocol: IpProtocol::UDP,
                offset: 40,
                fragment: None
            }
        );
        // Hop-by-hop (8 bytes) → destination options (16 bytes) → fragment → TCP.
        let mut pl = vec![60, 0, 5, 2, 0, 0, 1, 0]; // HBH: next 60, len 0, router alert
        pl.extend_from_slice(&[44, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // dst opts, PadN
        pl.extend_from_slice(&[6, 0, 0x05, 0x79, 0xde, 0xad, 0xbe, 0xef]); // frag: offset 175*8, M=1
        pl.extend_from_slice(&[0u8; 20]);
        let b = with_payload(0, &pl);
        let u = Ipv6Packet::new_checked(&b[..])
            .unwrap()
            .upper_layer()
            .unwrap();
        assert_eq!(u.protocol, IpProtocol::TCP);
        assert_eq!(u.offset, 40 + 8 + 16 + 8);
        assert_eq!(
            u.fragment,
            Some(Ipv6Fragment {
                offset: 0x0578,
                more_frags: true,
                ident: 0xdead_beef
            })
        );
        // AH: payload len 4 → (4 + 2) * 4 = 24 bytes.
        let mut pl = vec![17, 4];
        pl.resize(24, 0);
        pl.extend_from_slice(&[0u8; 8]);
        let b = with_payload(51, &pl);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..])
                .unwrap()
                .upper_layer()
                .unwrap()
                .offset,
            40 + 24
        );
        // ESP and no-next-header stop the walk.
        let b = with_payload(50, &[0; 8]);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..])
                .unwrap()
                .upper_layer()
                .unwrap()
                .protocol,
            IpProtocol(50)
        );
    }

    #[test]
    fn upper_layer_truncated() {
        // Destination options announcing 16 bytes with 8 present.
        let b = with_payload(60, &[6, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer(),
            Err(Error::Truncated {
                header: "IPv6 extension header",
                len: 8,
                need: 16
            })
        );
        // Hop-by-hop with no length byte.
        let b = with_payload(0, &[6]);
        assert_eq!(
            Ipv6Packet::new_checked(&b[..])
                .unwrap()
                .upper_layer()
                .unwrap_err()
                .reason(),
            "truncated"
        );
    }

    #[test]
    fn setters_keep_other_bits() {
        let mut b = known();
        let mut p = Ipv6Packet::new_checked(&mut b[..]).unwrap();
        p.set_flow_label(0xfffff);
        p.set_traffic_class(0x01);
        assert_eq!(
            (p.version(), p.traffic_class(), p.flow_label()),
            (6, 0x01, 0xfffff)
        );
        assert_eq!(p.decrement_hop_limit(), 63);
    }

    proptest! {
        #[test]
        fn upper_layer_never_panics(next in prop::sample::select(vec![0u8, 43, 44, 51, 60, 6, 17]), payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let b = with_payload(next, &payload);
            if let Ok(u) = Ipv6Packet::new_checked(&b[..]).unwrap().upper_layer() {
                prop_assert!(u.offset <= b.len());
            }
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Ipv6Packet::new_unchecked(&data[..]);
            if let Ok(r) = Ipv6Repr::parse(&p) {
                prop_assert_eq!(r.payload_len, p.payload().len());
                let mut out = vec![0u8; r.buffer_len()];
                r.emit(&mut Ipv6Packet::new_unchecked(&mut out[..]));
                prop_assert_eq!(&out[..40], &data[..40]);
            }
        }
    }
}
