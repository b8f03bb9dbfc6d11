//! TCP header (RFC 9293 §3.1): the view [`TcpPacket`], the value [`TcpRepr`], [`TcpFlags`] and an
//! iterator over the options ([`TcpOption`]).
//!
//! TCP has no length field of its own: the view's buffer must be exactly the IP payload (the IP
//! view's `payload()` gives that). The header length comes from the data offset; `check_len`
//! makes sure it is at least 5 words and fits. The checksum covers a pseudo header
//! ([`crate::checksum::pseudo_header`]), header and payload.
//!
//! To build a segment: `TcpRepr::emit` (header and options, checksum zeroed), write the payload
//! through `payload_mut`, then `fill_checksum(src, dst)`.

use core::fmt;
use std::net::IpAddr;

use crate::checksum;
use crate::error::{Error, Result};
use crate::field::{be16, be32};
use crate::ip::IpProtocol;
use crate::options::OptionBytes;

mod field {
    use crate::field::*;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const DOFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
    pub const OPTIONS: Rest = 20..;
}

/// Length of the TCP header without options.
pub const HEADER_LEN: usize = field::OPTIONS.start;

/// TCP options as a value (up to 40 bytes, a multiple of 4).
pub type TcpOptions = OptionBytes;

/// The eight TCP control bits (RFC 9293 §3.1, RFC 3168 for ECE/CWR).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// Push function.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// Acknowledgment field significant.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// Urgent pointer field significant.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECN-Echo.
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// Congestion window reduced.
    pub const CWR: TcpFlags = TcpFlags(0x80);

    /// True when every bit of `other` is set.
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when any bit of `other` is set.
    pub const fn intersects(self, other: TcpFlags) -> bool {
        self.0 & other.0 != 0
    }
}

impl core::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

impl core::ops::BitAnd for TcpFlags {
    type Output = TcpFlags;
    fn bitand(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & rhs.0)
    }
}

impl fmt::Display for TcpFlags {
    /// tcpdump's letters: `F S R P . U E W` for FIN SYN RST PSH ACK URG ECE CWR; `none` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.write_str("none");
        }
        for (bit, c) in [
            (0x01, 'F'),
            (0x02, 'S'),
            (0x04, 'R'),
            (0x08, 'P'),
            (0x10, '.'),
            (0x20, 'U'),
            (0x40, 'E'),
            (0x80, 'W'),
        ] {
            if self.0 & bit != 0 {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// One TCP option (RFC 9293 §3.2, RFC 7323, RFC 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// Kind 0: end of option list.
    EndOfList,
    /// Kind 1: padding.
    NoOperation,
    /// Kind 2: maximum segment size.
    MaxSegmentSize(u16),
    /// Kind 3: window scale shift count (RFC 7323 §2).
    WindowScale(u8),
    /// Kind 4: SACK permitted (RFC 2018).
    SackPermitted,
    /// Kind 5: SACK blocks, raw (pairs of 32-bit left/right edges, RFC 2018).
    Sack(&'a [u8]),
    /// Kind 8: timestamps (RFC 7323 §3).
    Timestamps {
        /// TSval.
        tsval: u32,
        /// TSecr.
        tsecr: u32,
    },
    /// Any other kind, with its data.
    Unknown {
        /// Option kind.
        kind: u8,
        /// Bytes after kind and length.
        data: &'a [u8],
    },
}

/// Iterator over the options of a TCP header; yields `(offset in the option area, option)` and
/// stops after End-of-List, at the end, or after the first malformed option (as an error).
#[derive(Debug, Clone)]
pub struct TcpOptionsIter<'a> {
    data: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> TcpOptionsIter<'a> {
    /// Iterate over an option area.
    pub fn new(data: &'a [u8]) -> Self {
        TcpOptionsIter {
            data,
            pos: 0,
            done: false,
        }
    }
}

impl<'a> Iterator for TcpOptionsIter<'a> {
    type Item = Result<(usize, TcpOption<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.data.len() {
            return None;
        }
        let at = self.pos;
        let kind = self.data[at];
        match kind {
            0 => {
                self.done = true;
                return Some(Ok((at, TcpOption::EndOfList)));
            }
            1 => {
                self.pos += 1;
                return Some(Ok((at, TcpOption::NoOperation)));
            }
            _ => {}
        }
        let bad = |len: u8| Error::BadTcpOption {
            kind,
            len,
            offset: at,
        };
        let Some(&len) = self.data.get(at + 1) else {
            self.done = true;
            return Some(Err(bad(0)));
        };
        let Some(body) = self
            .data
            .get(at + 2..at + usize::from(len))
            .filter(|_| len >= 2)
        else {
            self.done = true;
            return Some(Err(bad(len)));
        };
        let opt = match (kind, len) {
            (2, 4) => TcpOption::MaxSegmentSize(be16(body)),
            (3, 3) => TcpOption::WindowScale(body[0]),
            (4, 2) => TcpOption::SackPermitted,
            (5, l) if l >= 10 && (l - 2) & 7 == 0 => TcpOption::Sack(body),
            (8, 10) => TcpOption::Timestamps {
                tsval: be32(&body[0..4]),
                tsecr: be32(&body[4..8]),
            },
            (2..=5 | 8, _) => {
                self.done = true;
                return Some(Err(bad(len)));
            }
            _ => TcpOption::Unknown { kind, data: body },
        };
        self.pos += usize::from(len);
        Some(Ok((at, opt)))
    }
}

/// A read/write view of a TCP segment (the whole IP payload).
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the fixed header fits, the data offset is at least 5 and the options fit; after
    /// this no accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated {
                header: "TCP header",
                len,
                need: HEADER_LEN,
            });
        }
        let data_offset = self.buffer.as_ref()[field::DOFF] >> 4;
        if data_offset < 5 {
            return Err(Error::BadDataOffset { data_offset });
        }
        let need = self.header_len();
        if len < need {
            return Err(Error::Truncated {
                header: "TCP header with options",
                len,
                need,
            });
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

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SEQ_NUM])
    }

    /// Acknowledgment number.
    pub fn ack_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::ACK_NUM])
    }

    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DOFF] >> 4) * 4
    }

    /// Control bits.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }

    /// Window.
    pub fn window(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::WINDOW])
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }

    /// Urgent pointer.
    pub fn urgent(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::URGENT])
    }

    /// The option area (header length − 20 bytes).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.header_len()]
    }

    /// Iterate over the options.
    pub fn options_iter(&self) -> TcpOptionsIter<'_> {
        TcpOptionsIter::new(self.options())
    }

    /// The payload (everything after the header).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// The checksum this segment should carry for the given addresses.
    pub fn compute_checksum(&self, src: &IpAddr, dst: &IpAddr) -> u16 {
        let d = self.buffer.as_ref();
        let ph = checksum::pseudo_header(src, dst, IpProtocol::TCP.0, d.len() as u32);
        !checksum::combine(&[ph, checksum::sum(d), !self.checksum()])
    }

    /// True when the checksum verifies for the given addresses.
    pub fn verify_checksum(&self, src: &IpAddr, dst: &IpAddr) -> bool {
        let d = self.buffer.as_ref();
        let ph = checksum::pseudo_header(src, dst, IpProtocol::TCP.0, d.len() as u32);
        checksum::add(ph, checksum::sum(d)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Set the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the sequence number.
    pub fn set_seq_number(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEQ_NUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the acknowledgment number.
    pub fn set_ack_number(&mut self, v: u32) {
        self.buffer.as_mut()[field::ACK_NUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the header length in bytes (rounded down to words, at most 60); the reserved bits are
    /// cleared.
    pub fn set_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[field::DOFF] = ((len.min(60) / 4) as u8) << 4;
    }

    /// Set the control bits.
    pub fn set_flags(&mut self, f: TcpFlags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }

    /// Set the window.
    pub fn set_window(&mut self, v: u16) {
        self.buffer.as_mut()[field::WINDOW].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the urgent pointer.
    pub fn set_urgent(&mut self, v: u16) {
        self.buffer.as_mut()[field::URGENT].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable option area.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[HEADER_LEN..hl]
    }

    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[hl..]
    }

    /// Compute and write the checksum for the given addresses.
    pub fn fill_checksum(&mut self, src: &IpAddr, dst: &IpAddr) {
        let c = self.compute_checksum(src, dst);
        self.set_checksum(c);
    }

    /// Rewrite the source port and update the checksum incrementally (NAT); returns the old port.
    pub fn set_src_port_incremental(&mut self, port: u16) -> u16 {
        let old = self.src_port();
        self.set_src_port(port);
        let c = checksum::update16(self.checksum(), old, port);
        self.set_checksum(c);
        old
    }

    /// Rewrite the destination port and update the checksum incrementally (NAT); returns the old port.
    pub fn set_dst_port_incremental(&mut self, port: u16) -> u16 {
        let old = self.dst_port();
        self.set_dst_port(port);
        let c = checksum::update16(self.checksum(), old, port);
        self.set_checksum(c);
        old
    }

    /// Update the checksum for an IPv4 address in the pseudo header that changed from `old` to
    /// `new` (after NAT rewrote the IP header).
    pub fn update_checksum_for_addr(&mut self, old: std::net::Ipv4Addr, new: std::net::Ipv4Addr) {
        let c = checksum::update32(self.checksum(), u32::from(old), u32::from(new));
        self.set_checksum(c);
    }

    /// Lower the MSS option to `max` if it is larger (MSS clamping on a tunnel or NAT edge),
    /// updating the checksum incrementally (RFC 1624). Returns the old MSS when it changed. A
    /// malformed option list is left alone.
    pub fn clamp_mss(&mut self, max: u16) -> Option<u16> {
        let mut found = None;
        for item in self.options_iter() {
            match item {
                Ok((at, TcpOption::MaxSegmentSize(mss))) if mss > max => found = Some((at, mss)),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        let (at, old) = found?;
        let pos = HEADER_LEN + at + 2;
        self.buffer.as_mut()[pos..pos + 2].copy_from_slice(&max.to_be_bytes());
        // The MSS value may sit on an odd offset; byte-swapped words keep one's-complement sums
        // consistent only when aligned, so update the two 16-bit words it touches.
        if pos & 1 == 0 {
            let c = checksum::update16(self.checksum(), old, max);
            self.set_checksum(c);
        } else {
            let b = self.buffer.as_ref();
            let (o, n) = (old.to_be_bytes(), max.to_be_bytes());
            let w0_old = u16::from_be_bytes([b[pos - 1], o[0]]);
            let w0_new = u16::from_be_bytes([b[pos - 1], n[0]]);
            let w1_old = u16::from_be_bytes([o[1], b[pos + 2]]);
            let w1_new = u16::from_be_bytes([n[1], b[pos + 2]]);
            let c = checksum::update16(
                checksum::update16(self.checksum(), w0_old, w0_new),
                w1_old,
                w1_new,
            );
            self.set_checksum(c);
        }
        Some(old)
    }
}

/// A TCP header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number.
    pub ack_number: u32,
    /// Control bits.
    pub flags: TcpFlags,
    /// Window.
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// Options (header length = 20 + their length).
    pub options: TcpOptions,
    /// Payload length.
    pub payload_len: usize,
}

impl TcpRepr {
    /// Read a header, checking lengths and the checksum for the given addresses.
    pub fn parse<T: AsRef<[u8]>>(
        packet: &TcpPacket<T>,
        src: &IpAddr,
        dst: &IpAddr,
    ) -> Result<Self> {
        let r = Self::parse_ignoring_checksum(packet)?;
        if !packet.verify_checksum(src, dst) {
            return Err(Error::BadChecksum {
                header: "TCP",
                checksum: packet.checksum(),
            });
        }
        Ok(r)
    }

    /// Read a header, checking lengths only.
    pub fn parse_ignoring_checksum<T: AsRef<[u8]>>(packet: &TcpPacket<T>) -> Result<Self> {
        packet.check_len()?;
        Ok(TcpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window(),
            urgent: packet.urgent(),
            // check_len bounds the option area to 40 bytes in whole words.
            options: TcpOptions::new(packet.options()).unwrap_or_default(),
            payload_len: packet.payload().len(),
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

    /// Write header and options and zero the checksum. Write the payload, then call
    /// [`TcpPacket::fill_checksum`].
    ///
    /// # Panics
    /// If the packet's buffer is shorter than [`Self::header_len`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut TcpPacket<T>) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        packet.set_header_len(self.header_len());
        packet.set_flags(self.flags);
        packet.set_window(self.window);
        packet.set_checksum(0);
        packet.set_urgent(self.urgent);
        packet
            .options_mut()
            .copy_from_slice(self.options.as_slice());
    }
}

impl fmt::Display for TcpRepr {
    /// `tcp SPORT > DPORT [FLAGS] seq S ack A win W len L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tcp {} > {} [{}] seq {} ack {} win {} len {}",
            self.src_port,
            self.dst_port,
            self.flags,
            self.seq_number,
            self.ack_number,
            self.window,
            self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn addrs() -> (IpAddr, IpAddr) {
        (
            Ipv4Addr::new(10, 0, 0, 1).into(),
            Ipv4Addr::new(10, 0, 0, 2).into(),
        )
    }

    /// SYN from 40000 to 80 with MSS 1460, SACK-permitted, timestamps, NOP, window scale 7.
    fn syn_bytes() -> Vec<u8> {
        let mut b = vec![
            0x9c, 0x40, 0x00, 0x50, // ports
            0x00, 0x00, 0x10, 0x00, // seq 4096
            0x00, 0x00, 0x00, 0x00, // ack 0
            0xa0, 0x02, 0xfa, 0xf0, // doff 10, SYN, window 64240
            0x00, 0x00, 0x00, 0x00, // checksum (filled below), urgent
            0x02, 0x04, 0x05, 0xb4, // MSS 1460
            0x04, 0x02, // SACK permitted
            0x08, 0x0a, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, // timestamps 1 / 0
            0x01, // NOP
            0x03, 0x03, 0x07, // window scale 7
        ];
        // Independent checksum: pseudo header as bytes.
        let mut ph = vec![10, 0, 0, 1, 10, 0, 0, 2, 0, 6, 0, b.len() as u8];
        ph.extend_from_slice(&b);
        let c = checksum::checksum(&ph);
        b[16..18].copy_from_slice(&c.to_be_bytes());
        b
    }

    fn syn_repr() -> TcpRepr {
        TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq_number: 4096,
            ack_number: 0,
            flags: TcpFlags::SYN,
            window: 64240,
            urgent: 0,
            options: TcpOptions::new(&syn_bytes()[20..40]).unwrap(),
            payload_len: 0,
        }
    }

    #[test]
    fn parse_known_bytes() {
        let (s, d) = addrs();
        let b = syn_bytes();
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.header_len(), 40);
        assert!(
            p.flags().contains(TcpFlags::SYN)
                && !p.flags().intersects(TcpFlags::ACK | TcpFlags::RST)
        );
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(TcpRepr::parse(&p, &s, &d).unwrap(), syn_repr());
        let opts: Vec<_> = p.options_iter().map(|o| o.unwrap().1).collect();
        assert_eq!(
            opts,
            vec![
                TcpOption::MaxSegmentSize(1460),
                TcpOption::SackPermitted,
                TcpOption::Timestamps { tsval: 1, tsecr: 0 },
                TcpOption::NoOperation,
                TcpOption::WindowScale(7),
            ]
        );
    }

    #[test]
    fn emit_gives_same_bytes() {
        let (s, d) = addrs();
        let r = syn_repr();
        let mut out = vec![0xffu8; r.buffer_len()];
        let mut p = TcpPacket::new_unchecked(&mut out[..]);
        r.emit(&mut p);
        p.fill_checksum(&s, &d);
        assert_eq!(out, syn_bytes());
    }

    #[test]
    fn payload_and_ipv6_checksum() {
        let s: IpAddr = "2001:db8::a".parse::<Ipv6Addr>().unwrap().into();
        let d: IpAddr = "2001:db8::b".parse::<Ipv6Addr>().unwrap().into();
        let r = TcpRepr {
            flags: TcpFlags::ACK | TcpFlags::PSH,
            ack_number: 77,
            options: TcpOptions::EMPTY,
            payload_len: 5,
            ..syn_repr()
        };
        let mut out = vec![0u8; r.buffer_len()];
        let mut p = TcpPacket::new_unchecked(&mut out[..]);
        r.emit(&mut p);
        p.payload_mut().copy_from_slice(b"hello");
        p.fill_checksum(&s, &d);
        let p = TcpPacket::new_checked(&out[..]).unwrap();
        assert_eq!(p.payload(), b"hello");
        assert_eq!(TcpRepr::parse(&p, &s, &d).unwrap(), r);
        // (Swapping src and dst would not be caught: the pseudo-header sum is symmetric.)
        let other: IpAddr = "2001:db8::c".parse::<Ipv6Addr>().unwrap().into();
        assert_eq!(
            TcpRepr::parse(&p, &s, &other).unwrap_err().reason(),
            "bad-checksum"
        );
        assert_eq!(r.flags.to_string(), "P.");
    }

    #[test]
    fn errors() {
        let b = syn_bytes();
        assert_eq!(
            TcpPacket::new_checked(&b[..19]).unwrap_err(),
            Error::Truncated {
                header: "TCP header",
                len: 19,
                need: 20
            }
        );
        assert_eq!(
            TcpPacket::new_checked(&b[..39]).unwrap_err(),
            Error::Truncated {
                header: "TCP header with options",
                len: 39,
                need: 40
            }
        );
        let mut b = syn_bytes();
        b[12] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadDataOffset { data_offset: 4 }
        );
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err().reason(),
            "bad-tcp-data-offset"
        );
    }

    #[test]
    fn malformed_options() {
        // MSS with length 3, zero-length option, option running past the end.
        for (bytes, err) in [
            (
                &[2u8, 3, 5, 1][..],
                Error::BadTcpOption {
                    kind: 2,
                    len: 3,
                    offset: 0,
                },
            ),
            (
                &[1, 9, 0, 1][..],
                Error::BadTcpOption {
                    kind: 9,
                    len: 0,
                    offset: 1,
                },
            ),
            (
                &[1, 1, 30, 7, 0, 0, 0, 0][..],
                Error::BadTcpOption {
                    kind: 30,
                    len: 7,
                    offset: 2,
                },
            ),
            (
                &[1, 1, 1, 8][..],
                Error::BadTcpOption {
                    kind: 8,
                    len: 0,
                    offset: 3,
                },
            ),
        ] {
            let r: Vec<_> = TcpOptionsIter::new(bytes).collect();
            assert_eq!(r.last().unwrap().as_ref().unwrap_err(), &err, "{bytes:?}");
            assert_eq!(err.reason(), "bad-tcp-option");
        }
        // Unknown kinds are passed through, and End-of-List stops.
        let r: Vec<_> = TcpOptionsIter::new(&[30, 4, 9, 9, 0, 2, 4])
            .map(|x| x.unwrap().1)
            .collect();
        assert_eq!(
            r,
            vec![
                TcpOption::Unknown {
                    kind: 30,
                    data: &[9, 9]
                },
                TcpOption::EndOfList
            ]
        );
    }

    #[test]
    fn clamp_mss_keeps_checksum_valid() {
        let (s, d) = addrs();
        // Aligned MSS (offset 20).
        let mut b = syn_bytes();
        let mut p = TcpPacket::new_checked(&mut b[..]).unwrap();
        assert_eq!(p.clamp_mss(1400), Some(1460));
        assert!(p.verify_checksum(&s, &d));
        assert_eq!(p.clamp_mss(1400), None, "already at the limit");
        assert_eq!(
            p.options_iter().next().unwrap().unwrap().1,
            TcpOption::MaxSegmentSize(1400)
        );
        // Unaligned MSS: NOP first, so the value sits at an odd offset.
        let r = TcpRepr {
            options: TcpOptions::new(&[1, 2, 4, 0x23, 0x28, 1, 1, 1]).unwrap(),
            ..syn_repr()
        };
        let mut b = vec![0u8; r.buffer_len()];
        let mut p = TcpPacket::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        p.fill_checksum(&s, &d);
        assert_eq!(p.clamp_mss(1200), Some(9000));
        assert!(p.verify_checksum(&s, &d));
        let before = p.checksum();
        p.fill_checksum(&s, &d);
        assert_eq!(before, p.checksum());
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let (s, d) = addrs();
            let p = TcpPacket::new_unchecked(&data[..]);
            if p.check_len().is_ok() {
                for o in p.options_iter() {
                    let _ = o;
                }
                let _ = (p.payload(), p.options());
            }
            if let Ok(r) = TcpRepr::parse_ignoring_checksum(&p) {
                prop_assert_eq!(r.buffer_len(), data.len());
            }
            let _ = TcpRepr::parse(&p, &s, &d);
        }

        #[test]
        fn options_iter_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut last_end = 0;
            for item in TcpOptionsIter::new(&data) {
                match item {
                    Ok((at, _)) => { prop_assert!(at >= last_end && at < data.len()); last_end = at; }
                    Err(e) => prop_assert_eq!(e.reason(), "bad-tcp-option"),
                }
            }
        }

        #[test]
        fn nat_rewrite_matches_fill(
            payload in proptest::collection::vec(any::<u8>(), 0..32),
            s in any::<u32>(), d in any::<u32>(), nd in any::<u32>(), dp in any::<u16>(), ndp in any::<u16>(),
        ) {
            let (s, d, nd) = (Ipv4Addr::from(s), Ipv4Addr::from(d), Ipv4Addr::from(nd));
            let r = TcpRepr { dst_port: dp, payload_len: payload.len(), ..syn_repr() };
            let mut buf = vec![0u8; r.buffer_len()];
            let mut p = TcpPacket::new_unchecked(&mut buf[..]);
            r.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(&s.into(), &d.into());
            prop_assert_eq!(p.set_dst_port_incremental(ndp), dp);
            p.update_checksum_for_addr(d, nd);
            prop_assert!(p.verify_checksum(&s.into(), &nd.into()));
            let incr = p.checksum();
            p.fill_checksum(&s.into(), &nd.into());
            prop_assert_eq!(incr, p.checksum());
        }

        #[test]
        fn clamp_mss_matches_full_recompute(nops in 0usize..4, mss in any::<u16>(), max in any::<u16>(), payload in proptest::collection::vec(any::<u8>(), 0..20)) {
            let (s, d) = addrs();
            let mut o = vec![1u8; nops];
            o.extend_from_slice(&[2, 4]);
            o.extend_from_slice(&mss.to_be_bytes());
            while o.len() % 4 != 0 { o.push(0); }
            let r = TcpRepr { options: TcpOptions::new(&o).unwrap(), payload_len: payload.len(), ..syn_repr() };
            let mut b = vec![0u8; r.buffer_len()];
            let mut p = TcpPacket::new_unchecked(&mut b[..]);
            r.emit(&mut p);
            p.payload_mut().copy_from_slice(&payload);
            p.fill_checksum(&s, &d);
            let changed = p.clamp_mss(max);
            prop_assert_eq!(changed, if mss > max { Some(mss) } else { None });
            prop_assert!(p.verify_checksum(&s, &d));
        }
    }
}
