//! UDP (RFC 768): the view [`UdpPacket`] and the value [`UdpRepr`].
//!
//! The checksum covers a pseudo header (see [`crate::checksum::pseudo_header`]), the UDP header and
//! the payload. Over IPv4 a zero checksum means "none" (RFC 768); over IPv6 it is invalid (RFC 8200
//! §8.1). A computed checksum of zero is sent as 0xffff.
//!
//! To build a datagram: `UdpRepr::emit` (header, checksum zeroed), write the payload through
//! `payload_mut`, then `fill_checksum(src, dst)`.

use std::net::{IpAddr, Ipv4Addr};

use crate::checksum;
use crate::error::{Error, Result};
use crate::field::be16;
use crate::ip::IpProtocol;

mod field {
    use crate::field::*;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
    pub const PAYLOAD: Rest = 8..;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the header fits and the length field is within 8..=buffer length (RFC 768); after
    /// this no accessor panics. Bytes beyond the length field are ignored.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                header: "UDP header",
                len,
                need: HEADER_LEN,
            });
        }
        let length = self.len();
        if usize::from(length) < HEADER_LEN || usize::from(length) > len {
            return Err(Error::BadUdpLength { length, len });
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }

    /// Length field (header + payload).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// Header and payload, up to the length field.
    fn datagram(&self) -> &[u8] {
        &self.buffer.as_ref()[..usize::from(self.len())]
    }

    /// The checksum this datagram should carry for the given addresses (0 sent as 0xffff).
    pub fn compute_checksum(&self, src: &IpAddr, dst: &IpAddr) -> u16 {
        let d = self.datagram();
        let ph = checksum::pseudo_header(src, dst, IpProtocol::UDP.0, d.len() as u32);
        // Sum with the checksum field counted as zero.
        let s = checksum::combine(&[ph, checksum::sum(d), !self.checksum()]);
        match !s {
            0 => 0xffff,
            c => c,
        }
    }

    /// True when the checksum verifies for the given addresses; a zero checksum over IPv4 means
    /// "not computed" and verifies (RFC 768), over IPv6 it does not (RFC 8200 §8.1).
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        if self.checksum() == 0 {
            return src.is_ipv4();
        }
        let d = self.datagram();
        let ph = checksum::pseudo_header(src, dst, IpProtocol::UDP.0, d.len() as u32);
        checksum::add(ph, checksum::sum(d)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Set the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the length field.
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable payload, up to the length field.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..l]
    }

    /// Compute and write the checksum for the given addresses.
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        let c = self.compute_checksum(src, dst);
        self.set_checksum(c);
    }

    /// Apply an RFC 1624 update to the checksum, keeping "no checksum" (0, IPv4 only) as it is and
    /// sending a zero result as 0xffff (RFC 768).
    fn adjust_checksum(&mut self, f: impl FnOnce(u16) -> u16) {
        let c = self.checksum();
        if c == 0 {
            return;
        }
        let n = match f(c) {
            0 => 0xffff,
            n => n,
        };
        self.set_checksum(n);
    }

    /// Rewrite the source port and update the checksum incrementally (NAT); returns the old port.
    pub fn set_src_port_incremental(&mut self, port: u16) -> u16 {
        let old = self.src_port();
        self.set_src_port(port);
        self.adjust_checksum(|c| checksum::update16(c, old, port));
        old
    }

    /// Rewrite the destination port and update the checksum incrementally (NAT); returns the old port.
    pub fn set_dst_port_incremental(&mut self, port: u16) -> u16 {
        let old = self.dst_port();
        self.set_dst_port(port);
        self.adjust_checksum(|c| checksum::update16(c, old, port));
        old
    }

    /// Update the checksum for an IPv4 address in the pseudo header that changed from `old` to
    /// `new` (after NAT rewrote the IP header).
    pub fn update_checksum_for_addr(&mut self, old: Ipv4Addr, new: Ipv4Addr) {
        self.adjust_checksum(|c| checksum::update32(c, u32::from(old), u32::from(new)));
    }
}

/// A UDP header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Read a header, checking lengths and the checksum for the given addresses.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &UdpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
    ) -> Result<Self> {
        let r = Self::parse_ignoring_checksum(packet)?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum {
                header: "UDP",
                checksum: packet.checksum(),
            });
        }
        Ok(r)
    }

    /// Read a header, checking lengths only.
    pub fn parse_ignoring_checksum<T: AsRef<[u8]>>(packet: &UdpPacket<T>) -> Result<Self> {
        packet.check_len()?;
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: usize::from(packet.len()) - HEADER_LEN,
        })
    }

    /// Header length (8).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Header plus payload.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write ports and length, and zero the checksum. Write the payload, then call
    /// [`UdpPacket::fill_checksum`] (or leave it zero over IPv4 for "no checksum").
    ///
    /// # Panics
    /// If the packet's buffer is shorter than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut UdpPacket<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(self.buffer_len().min(usize::from(u16::MAX)) as u16);
        packet.set_checksum(0);
    }
}

impl core::fmt::Display for UdpRepr {
    /// `udp SPORT > DPORT len L`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "udp {} > {} len {}",
            self.src_port, self.dst_port, self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::Ipv6Addr;

    fn v4() -> (IpAddr, IpAddr) {
        (
            Ipv4Addr::new(192, 168, 0, 1).into(),
            Ipv4Addr::new(192, 168, 0, 199).into(),
        )
    }

    // 1234 -> 53, 4 payload bytes "abcd", checksum for 192.168.0.1 -> 192.168.0.199.
    fn known() -> Vec<u8> {
        vec![
            0x04, 0xd2, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, b'a', b'b', b'c', b'd',
        ]
    }

    /// Independent checksum: build the IPv4 pseudo header as bytes and sum it all.
    fn reference_checksum_v4(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
        let mut b = Vec::new();
        b.extend_from_slice(&src.octets());
        b.extend_from_slice(&dst.octets());
        b.extend_from_slice(&[0, 17]);
        b.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        b.extend_from_slice(udp);
        checksum::checksum(&b)
    }

    #[test]
    fn round_trip_known_bytes() {
        let (s, d) = v4();
        let mut bytes = known();
        let c = reference_checksum_v4(
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 199),
            &bytes,
        );
        bytes[6..8].copy_from_slice(&c.to_be_bytes());

        let p = UdpPacket::new_checked(&bytes[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (1234, 53, 12));
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum(&s, &d));
        let r = UdpRepr::parse(&p, &s, &d).unwrap();
        assert_eq!(
            r,
            UdpRepr {
                src_port: 1234,
                dst_port: 53,
                payload_len: 4
            }
        );

        let mut out = vec![0u8; r.buffer_len()];
        let mut q = UdpPacket::new_unchecked(&mut out[..]);
        r.emit(&mut q);
        q.payload_mut().copy_from_slice(b"abcd");
        q.fill_checksum(&s, &d);
        assert_eq!(out, bytes);
    }

    #[test]
    fn checksum_zero_rules() {
        let (s, d) = v4();
        let bytes = known(); // checksum field 0
        let p = UdpPacket::new_checked(&bytes[..]).unwrap();
        assert!(p.verify_checksum(&s, &d), "zero = none over IPv4");
        let s6: IpAddr = Ipv6Addr::LOCALHOST.into();
        assert!(!p.verify_checksum(&s6, &s6), "zero is invalid over IPv6");
        assert_eq!(
            UdpRepr::parse(&p, &s6, &s6).unwrap_err().reason(),
            "bad-checksum"
        );
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Choose the payload word so that the checksum computes to zero, then check 0xffff is sent.
        let (s, d) = v4();
        let mut bytes = vec![0x04, 0xd2, 0x00, 0x35, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00];
        let c = reference_checksum_v4(
            Ipv4Addr::new(192, 168, 0, 1),
            Ipv4Addr::new(192, 168, 0, 199),
            &bytes,
        );
        // Adding c to the data makes the sum 0xffff, hence a checksum of 0.
        bytes[8..10].copy_from_slice(&c.to_be_bytes());
        let mut p = UdpPacket::new_checked(&mut bytes[..]).unwrap();
        p.fill_checksum(&s, &d);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(&s, &d));
    }

    #[test]
    fn ipv6_checksum() {
        let s: IpAddr = "2001:db8::1".parse::<Ipv6Addr>().unwrap().into();
        let d: IpAddr = "2001:db8::2".parse::<Ipv6Addr>().unwrap().into();
        let mut bytes = known();
        let mut p = UdpPacket::new_checked(&mut bytes[..]).unwrap();
        p.fill_checksum(&s, &d);
        assert!(p.verify_checksum(&s, &d));
        assert!(!p.verify_checksum(&d, &v4().0));
        // Independent: IPv6 pseudo header as bytes.
        let mut b = Vec::new();
        for a in [s, d] {
            if let IpAddr::V6(a) = a {
                b.extend_from_slice(&a.octets());
            }
        }
        b.extend_from_slice(&12u32.to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 17]);
        let mut u = known();
        b.extend_from_slice(&u);
        u[6..8].copy_from_slice(&checksum::checksum(&b).to_be_bytes());
        assert_eq!(bytes, u);
    }

    #[test]
    fn errors() {
        let b = known();
        assert_eq!(
            UdpPacket::new_checked(&b[..7]).unwrap_err(),
            Error::Truncated {
                header: "UDP header",
                len: 7,
                need: 8
            }
        );
        let mut b = known();
        b[5] = 13;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadUdpLength {
                length: 13,
                len: 12
            }
        );
        b[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err().reason(),
            "bad-udp-length"
        );
        // Corrupted payload fails the checksum.
        let (s, d) = v4();
        let mut b = known();
        UdpPacket::new_unchecked(&mut b[..]).fill_checksum(&s, &d);
        b[9] ^= 0x40;
        assert!(matches!(
            UdpRepr::parse(&UdpPacket::new_unchecked(&b[..]), &s, &d),
            Err(Error::BadChecksum { .. })
        ));
    }

    #[test]
    fn nat_rewrites_keep_checksum_valid() {
        let (s, d) = v4();
        let mut b = known();
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        p.fill_checksum(&s, &d);
        let new_src = Ipv4Addr::new(203, 0, 113, 9);
        assert_eq!(p.set_src_port_incremental(61000), 1234);
        p.update_checksum_for_addr(Ipv4Addr::new(192, 168, 0, 1), new_src);
        assert!(p.verify_checksum(&new_src.into(), &d));
        assert_eq!(p.set_dst_port_incremental(5353), 53);
        let incr = p.checksum();
        p.fill_checksum(&new_src.into(), &d);
        assert_eq!(incr, p.checksum());
        // "No checksum" stays so.
        let mut b = known();
        let mut p = UdpPacket::new_checked(&mut b[..]).unwrap();
        p.set_src_port_incremental(1);
        p.update_checksum_for_addr(Ipv4Addr::new(192, 168, 0, 1), new_src);
        assert_eq!(p.checksum(), 0);
    }

    proptest! {
        #[test]
        fn nat_rewrite_matches_fill(
            payload in proptest::collection::vec(any::<u8>(), 0..32),
            s in any::<u32>(), d in any::<u32>(), ns in any::<u32>(), sp in any::<u16>(), nsp in any::<u16>(),
        ) {
            let (s, d, ns) = (Ipv4Addr::from(s), Ipv4Addr::from(d), Ipv4Addr::from(ns));
            let r = UdpRepr { src_port: sp, dst_port: 53, payload_len: payload.len() };
            let mut buf = vec![0u8; r.buffer_len()];
            let mut p = UdpPacket::new_unchecked(&mut buf[..]);
            r.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(&s.into(), &d.into());
            p.set_src_port_incremental(nsp);
            p.update_checksum_for_addr(s, ns);
            let incr = p.checksum();
            p.fill_checksum(&ns.into(), &d.into());
            prop_assert_eq!(incr, p.checksum());
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40), src in any::<u32>()) {
            let p = UdpPacket::new_unchecked(&data[..]);
            let a: IpAddr = Ipv4Addr::from(src).into();
            if let Ok(r) = UdpRepr::parse(&p, &a, &a) {
                prop_assert_eq!(r.payload_len, p.payload().len());
            }
            let _ = UdpRepr::parse_ignoring_checksum(&p);
        }

        #[test]
        fn fill_then_verify(payload in proptest::collection::vec(any::<u8>(), 0..64), s in any::<u32>(), d in any::<u32>(), v6 in any::<bool>()) {
            let (s, d): (IpAddr, IpAddr) = if v6 {
                (Ipv6Addr::from(u128::from(s) << 64 | 7).into(), Ipv6Addr::from(u128::from(d)).into())
            } else {
                (Ipv4Addr::from(s).into(), Ipv4Addr::from(d).into())
            };
            let r = UdpRepr { src_port: 7, dst_port: 9, payload_len: payload.len() };
            let mut buf = vec![0u8; r.buffer_len()];
            let mut p = UdpPacket::new_unchecked(&mut buf[..]);
            r.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(&s, &d);
            prop_assert!(p.checksum() != 0);
            prop_assert_eq!(UdpRepr::parse(&UdpPacket::new_checked(&buf[..]).unwrap(), &s, &d).unwrap(), r);
        }
    }
}
