//! IPv4 (RFC 791): the view [`Ipv4Packet`], the value [`Ipv4Repr`] and its [`Ipv4Options`].
//!
//! `check_len` makes sure the header (with options, IHL > 5) and the total length fit the buffer, so
//! `header()`, `options()` and `payload()` never panic afterwards; a buffer longer than the total
//! length (Ethernet padding) is fine and `payload()` stops at the total length. [`Ipv4Repr::parse`]
//! adds the version and header-checksum checks. Setters that change lengths (`set_header_len`,
//! `set_total_len`) void the `check_len` promise until it is run again.

use std::net::Ipv4Addr;

use crate::checksum;
use crate::error::{Error, Result};
use crate::field::{be16, be32};
use crate::ip::IpProtocol;
use crate::options::OptionBytes;

mod field {
    use crate::field::*;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLAGS_FRAG: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
    pub const OPTIONS: Rest = 20..;
}

/// Length of the IPv4 header without options.
pub const HEADER_LEN: usize = field::OPTIONS.start;
/// Largest IPv4 header (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

const DONT_FRAG: u16 = 0x4000;
const MORE_FRAGS: u16 = 0x2000;
const FRAG_MASK: u16 = 0x1fff;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the fixed header, the options announced by IHL and the total length fit the buffer,
    /// and that IHL >= 5 and total length >= header length (RFC 791 §3.1). After this no accessor
    /// panics. Version and checksum are not checked here (see [`Ipv4Repr::parse`]).
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                header: "IPv4 header",
                len,
                need: HEADER_LEN,
            });
        }
        let ihl = self.buffer.as_ref()[field::VER_IHL] & 0x0f;
        if ihl < 5 {
            return Err(Error::BadHeaderLength { ihl });
        }
        let header_len = self.header_len();
        if len < header_len {
            return Err(Error::Truncated {
                header: "IPv4 header with options",
                len,
                need: header_len,
            });
        }
        let total_len = self.total_len();
        if usize::from(total_len) < header_len || usize::from(total_len) > len {
            return Err(Error::BadTotalLength {
                total_len,
                header_len,
                len,
            });
        }
        Ok(())
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Version nibble (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point (RFC 2474).
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification (RFC 3168).
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length (header + payload).
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TOTAL_LEN])
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLAGS_FRAG]) & DONT_FRAG != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLAGS_FRAG]) & MORE_FRAGS != 0
    }

    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> u16 {
        (be16(&self.buffer.as_ref()[field::FLAGS_FRAG]) & FRAG_MASK) << 3
    }

    /// True for any fragment (MF set or offset non-zero).
    pub fn is_fragment(&self) -> bool {
        be16(&self.buffer.as_ref()[field::FLAGS_FRAG]) & (MORE_FRAGS | FRAG_MASK) != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(&self.buffer.as_ref()[field::SRC_ADDR]))
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(&self.buffer.as_ref()[field::DST_ADDR]))
    }

    /// The whole header, options included.
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// The options (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// True when the header checksum verifies (RFC 791 §3.1, RFC 1071).
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.header())
    }

    /// The payload, up to the total length (trailing padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Set version 4... or any version nibble.
    pub fn set_version(&mut self, v: u8) {
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0x0f) | (v << 4);
    }

    /// Set the header length in bytes (rounded down to 4-byte words, at most 60).
    pub fn set_header_len(&mut self, len: usize) {
        let ihl = (len.min(MAX_HEADER_LEN) / 4) as u8;
        let b = &mut self.buffer.as_mut()[field::VER_IHL];
        *b = (*b & 0xf0) | ihl;
    }

    /// Set the DSCP (6 bits).
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (dscp << 2);
    }

    /// Set the ECN (2 bits).
    pub fn set_ecn(&mut self, ecn: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0xfc) | (ecn & 0x03);
    }

    /// Set the total length.
    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::TOTAL_LEN].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the identification.
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }

    fn set_flags_frag(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLAGS_FRAG].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the don't-fragment flag.
    pub fn set_dont_frag(&mut self, on: bool) {
        let v = be16(&self.buffer.as_ref()[field::FLAGS_FRAG]);
        self.set_flags_frag(if on { v | DONT_FRAG } else { v & !DONT_FRAG });
    }

    /// Set the more-fragments flag.
    pub fn set_more_frags(&mut self, on: bool) {
        let v = be16(&self.buffer.as_ref()[field::FLAGS_FRAG]);
        self.set_flags_frag(if on { v | MORE_FRAGS } else { v & !MORE_FRAGS });
    }

    /// Set the fragment offset in bytes (must be a multiple of 8; lower bits are dropped).
    pub fn set_frag_offset(&mut self, bytes: u16) {
        let v = be16(&self.buffer.as_ref()[field::FLAGS_FRAG]);
        self.set_flags_frag((v & !FRAG_MASK) | ((bytes >> 3) & FRAG_MASK));
    }

    /// Set the TTL.
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Set the protocol.
    pub fn set_protocol(&mut self, p: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = p.0;
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the source address.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    /// Set the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Mutable options.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    /// Mutable payload, up to the total length.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, tl) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[hl..tl]
    }

    /// Compute and write the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.header());
        self.set_checksum(c);
    }

    /// Decrement the TTL by one and update the checksum incrementally (RFC 1624 eqn. 3 on the
    /// TTL/protocol word). Returns the new TTL; a TTL of 0 stays 0 and nothing changes.
    pub fn decrement_ttl(&mut self) -> u8 {
        let ttl = self.ttl();
        if ttl == 0 {
            return 0;
        }
        let p = self.buffer.as_ref()[field::PROTOCOL];
        let old = u16::from_be_bytes([ttl, p]);
        let new = u16::from_be_bytes([ttl - 1, p]);
        self.set_ttl(ttl - 1);
        let c = checksum::update16(self.checksum(), old, new);
        self.set_checksum(c);
        ttl - 1
    }

    /// Rewrite the source address and update the header checksum incrementally (RFC 1624), as
    /// NAT does. Returns the old address (the L4 checksum is the caller's: see
    /// [`checksum::update32`]).
    pub fn set_src_addr_incremental(&mut self, a: Ipv4Addr) -> Ipv4Addr {
        let old = self.src_addr();
        self.set_src_addr(a);
        let c = checksum::update32(self.checksum(), u32::from(old), u32::from(a));
        self.set_checksum(c);
        old
    }

    /// Rewrite the destination address and update the header checksum incrementally (RFC 1624).
    /// Returns the old address.
    pub fn set_dst_addr_incremental(&mut self, a: Ipv4Addr) -> Ipv4Addr {
        let old = self.dst_addr();
        self.set_dst_addr(a);
        let c = checksum::update32(self.checksum(), u32::from(old), u32::from(a));
        self.set_checksum(c);
        old
    }
}

/// IPv4 options as a value (up to 40 bytes, a multiple of 4: pad with End-of-Options, RFC 791 §3.1).
pub type Ipv4Options = OptionBytes;

/// An IPv4 header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: IpProtocol,
    /// Payload length (total length − header length).
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN (2 bits).
    pub ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
    /// More-fragments flag.
    pub more_frags: bool,
    /// Fragment offset in bytes (multiple of 8).
    pub frag_offset: u16,
    /// Options (IHL > 5).
    pub options: Ipv4Options,
}

impl Ipv4Repr {
    /// A header with the common defaults: TTL 64, DF set, no options, DSCP/ECN/ident 0.
    pub fn new(
        src_addr: Ipv4Addr,
        dst_addr: Ipv4Addr,
        protocol: IpProtocol,
        payload_len: usize,
    ) -> Self {
        Ipv4Repr {
            src_addr,
            dst_addr,
            protocol,
            payload_len,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: true,
            more_frags: false,
            frag_offset: 0,
            options: Ipv4Options::EMPTY,
        }
    }

    /// Read and validate a header: lengths ([`Ipv4Packet::check_len`]), version 4 and the header
    /// checksum.
    pub fn parse<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Self> {
        let r = Self::parse_ignoring_checksum(packet)?;
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum {
                header: "IPv4 header",
                checksum: packet.checksum(),
            });
        }
        Ok(r)
    }

    /// Like [`Self::parse`] without verifying the checksum (for offloaded or already checked packets).
    pub fn parse_ignoring_checksum<T: AsRef<[u8]>>(packet: &Ipv4Packet<T>) -> Result<Self> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(Error::BadVersion {
                version: packet.version(),
                expected: 4,
            });
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - packet.header_len(),
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            // check_len bounds the options to 40 bytes in 4-byte words, so this always succeeds.
            options: Ipv4Options::new(packet.options()).unwrap_or_default(),
        })
    }

    /// Header length, options included.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Header plus payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Write the header, options and checksum (the payload is the caller's).
    ///
    /// # Panics
    /// If the packet's buffer is shorter than [`Self::header_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Ipv4Packet<T>) {
        packet.set_version(4);
        packet.set_header_len(self.header_len());
        packet.buffer.as_mut()[field::DSCP_ECN] = (self.dscp << 2) | (self.ecn & 0x03);
        packet.set_total_len(self.buffer_len().min(usize::from(u16::MAX)) as u16);
        packet.set_ident(self.ident);
        let mut ff = (self.frag_offset >> 3) & FRAG_MASK;
        if self.dont_frag {
            ff |= DONT_FRAG;
        }
        if self.more_frags {
            ff |= MORE_FRAGS;
        }
        packet.set_flags_frag(ff);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet
            .options_mut()
            .copy_from_slice(self.options.as_slice());
        packet.fill_checksum();
    }
}

impl core::fmt::Display for Ipv4Repr {
    /// `ipv4 SRC > DST PROTO ttl T len L[ frag OFF[+]][ df]`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ipv4 {} > {} {} ttl {} len {}",
            self.src_addr, self.dst_addr, self.protocol, self.ttl, self.payload_len
        )?;
        if self.frag_offset != 0 || self.more_frags {
            write!(
                f,
                " frag {}{}",
                self.frag_offset,
                if self.more_frags { "+" } else { "" }
            )?;
        }
        if self.dont_frag {
            f.write_str(" df")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // 10.0.0.1 -> 10.0.0.2, UDP, TTL 64, DF, ident 0x1234, 4 payload bytes.
    static PACKET: [u8; 24] = [
        0x45, 0x00, 0x00, 0x18, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x9f, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0xde, 0xad, 0xbe, 0xef,
    ];

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            ident: 0x1234,
            ..Ipv4Repr::new(
                Ipv4Addr::new(10, 0, 0, 1),
                Ipv4Addr::new(10, 0, 0, 2),
                IpProtocol::UDP,
                4,
            )
        }
    }

    #[test]
    fn parse_known_bytes() {
        let p = Ipv4Packet::new_checked(&PACKET[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(
            p.checksum(),
            checksum::checksum(&{
                let mut h = [0u8; 20];
                h.copy_from_slice(&PACKET[..20]);
                h[10] = 0;
                h[11] = 0;
                h
            })
        );
        assert_eq!(p.payload(), &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn emit_gives_same_bytes() {
        let r = repr();
        assert_eq!(r.buffer_len(), 24);
        let mut buf = [0u8; 24];
        let mut p = Ipv4Packet::new_unchecked(&mut buf[..]);
        r.emit(&mut p);
        p.payload_mut().copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(buf, PACKET);
    }

    #[test]
    fn options_round_trip() {
        // Router Alert (RFC 2113): 94 04 00 00, IHL 6.
        let mut r = repr();
        r.options = Ipv4Options::new(&[0x94, 0x04, 0x00, 0x00]).unwrap();
        r.frag_offset = 1480;
        r.more_frags = true;
        r.dont_frag = false;
        r.dscp = 46;
        r.ecn = 1;
        let mut buf = vec![0u8; r.buffer_len() + 6]; // trailing Ethernet padding
        r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[0], 0x46);
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.header_len(), 24);
        assert_eq!(p.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(p.payload().len(), 4);
        assert!(p.is_fragment());
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
    }

    #[test]
    fn truncated() {
        let e = Ipv4Packet::new_checked(&PACKET[..19]).unwrap_err();
        assert_eq!(
            e,
            Error::Truncated {
                header: "IPv4 header",
                len: 19,
                need: 20
            }
        );
        // IHL 6 but only 20 bytes.
        let mut b = PACKET;
        b[0] = 0x46;
        let e = Ipv4Packet::new_checked(&b[..20]).unwrap_err();
        assert_eq!(
            e,
            Error::Truncated {
                header: "IPv4 header with options",
                len: 20,
                need: 24
            }
        );
        assert_eq!(e.reason(), "truncated");
    }

    #[test]
    fn bad_ihl() {
        let mut b = PACKET;
        b[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLength { ihl: 4 }
        );
    }

    #[test]
    fn bad_total_length() {
        let mut b = PACKET;
        b[3] = 25; // longer than the 24-byte buffer
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            Error::BadTotalLength {
                total_len: 25,
                header_len: 20,
                len: 24
            }
        );
        b[3] = 19; // shorter than the header
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err().reason(),
            "bad-total-length"
        );
    }

    #[test]
    fn bad_version_and_checksum() {
        let mut b = PACKET;
        b[0] = 0x65;
        assert_eq!(
            Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&b[..])).unwrap_err(),
            Error::BadVersion {
                version: 6,
                expected: 4
            }
        );
        let mut b = PACKET;
        b[8] = 0x3f; // TTL changed, checksum not
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            Ipv4Repr::parse(&p).unwrap_err(),
            Error::BadChecksum {
                header: "IPv4 header",
                checksum: 0x149f
            }
        );
        assert!(Ipv4Repr::parse_ignoring_checksum(&p).is_ok());
    }

    #[test]
    fn decrement_ttl_keeps_checksum_valid() {
        let mut b = PACKET;
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        for expect in (0..64).rev() {
            assert_eq!(p.decrement_ttl(), expect);
            assert!(p.verify_checksum());
        }
        assert_eq!(p.decrement_ttl(), 0);
        assert!(p.verify_checksum());
    }

    #[test]
    fn incremental_address_rewrite_matches_fill() {
        let mut b = PACKET;
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        let old = p.set_src_addr_incremental(Ipv4Addr::new(203, 0, 113, 7));
        assert_eq!(old, Ipv4Addr::new(10, 0, 0, 1));
        p.set_dst_addr_incremental(Ipv4Addr::new(198, 51, 100, 255));
        let incr = p.checksum();
        p.fill_checksum();
        assert_eq!(incr, p.checksum());
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = Ipv4Packet::new_unchecked(&data[..]);
            if p.check_len().is_ok() {
                // The check_len promise: every accessor works.
                let _ = (p.header(), p.options(), p.payload(), p.verify_checksum(), p.frag_offset());
            }
            if let Ok(r) = Ipv4Repr::parse(&p) {
                prop_assert_eq!(r.buffer_len(), usize::from(p.total_len()));
            }
        }

        #[test]
        fn emit_parse_round_trip(
            src in any::<u32>(), dst in any::<u32>(), proto in any::<u8>(), ttl in any::<u8>(),
            dscp in 0u8..64, ecn in 0u8..4, ident in any::<u16>(), df in any::<bool>(), mf in any::<bool>(),
            frag in 0u16..8192, opt_words in 0usize..=10, payload_len in 0usize..100,
        ) {
            let opts: Vec<u8> = (0..opt_words * 4).map(|i| i as u8).collect();
            let r = Ipv4Repr {
                src_addr: src.into(), dst_addr: dst.into(), protocol: IpProtocol(proto), payload_len,
                ttl, dscp, ecn, ident, dont_frag: df, more_frags: mf, frag_offset: frag * 8,
                options: Ipv4Options::new(&opts).unwrap(),
            };
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            prop_assert_eq!(Ipv4Repr::parse(&Ipv4Packet::new_checked(&buf[..]).unwrap()).unwrap(), r);
        }
    }
}
