//! ICMP for IPv4 (RFC 792): the view [`Icmpv4Packet`], the message type [`Icmpv4Message`] and the
//! value [`Icmpv4Repr`] (echo request/reply, and every other message by type, code and the 4-byte
//! rest of header).
//!
//! The view's buffer is the whole ICMP message (the IPv4 payload); the checksum covers all of it
//! (RFC 792). To build a message: `Icmpv4Repr::emit`, write the data through `data_mut`, then
//! `fill_checksum`.

use core::fmt;

use crate::checksum;
use crate::error::{Error, Result};
use crate::field::{be16, be32};

mod field {
    use crate::field::*;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const REST: Field = 4..8;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const DATA: Rest = 8..;
}

/// Length of the ICMP header (type, code, checksum, rest of header).
pub const HEADER_LEN: usize = field::DATA.start;

/// An ICMPv4 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Icmpv4Message(pub u8);

impl Icmpv4Message {
    /// Echo reply.
    pub const ECHO_REPLY: Icmpv4Message = Icmpv4Message(0);
    /// Destination unreachable.
    pub const DST_UNREACHABLE: Icmpv4Message = Icmpv4Message(3);
    /// Redirect.
    pub const REDIRECT: Icmpv4Message = Icmpv4Message(5);
    /// Echo request.
    pub const ECHO_REQUEST: Icmpv4Message = Icmpv4Message(8);
    /// Time exceeded.
    pub const TIME_EXCEEDED: Icmpv4Message = Icmpv4Message(11);
    /// Parameter problem.
    pub const PARAM_PROBLEM: Icmpv4Message = Icmpv4Message(12);
}

impl fmt::Display for Icmpv4Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("echo-reply"),
            3 => f.write_str("destination-unreachable"),
            5 => f.write_str("redirect"),
            8 => f.write_str("echo-request"),
            11 => f.write_str("time-exceeded"),
            12 => f.write_str("parameter-problem"),
            n => write!(f, "type-{n}"),
        }
    }
}

/// A read/write view of an ICMPv4 message.
#[derive(Debug, Clone)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv4Packet { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the 8-byte header fits; after this no accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            Err(Error::Truncated {
                header: "ICMPv4 header",
                len,
                need: HEADER_LEN,
            })
        } else {
            Ok(())
        }
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Message type.
    pub fn msg_type(&self) -> Icmpv4Message {
        Icmpv4Message(self.buffer.as_ref()[field::TYPE])
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

    /// Echo identifier (echo messages).
    pub fn echo_ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_IDENT])
    }

    /// Echo sequence number (echo messages).
    pub fn echo_seq_no(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::ECHO_SEQNO])
    }

    /// Data after the header (echo data, or the offending IP header + 8 bytes for errors).
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// True when the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Set the message type.
    pub fn set_msg_type(&mut self, v: Icmpv4Message) {
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

    /// Rewrite the echo identifier and update the checksum incrementally (NAT of ICMP queries);
    /// returns the old identifier.
    pub fn set_echo_ident_incremental(&mut self, ident: u16) -> u16 {
        let old = self.echo_ident();
        self.set_echo_ident(ident);
        let c = checksum::update16(self.checksum(), old, ident);
        self.set_checksum(c);
        old
    }

    /// Mutable data.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }

    /// Compute and write the checksum over the whole message.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// An ICMPv4 message header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Icmpv4Repr {
    /// Echo request (type 8, code 0).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Length of the echo data.
        data_len: usize,
    },
    /// Echo reply (type 0, code 0).
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Length of the echo data.
        data_len: usize,
    },
    /// Any other message (or echo with a non-zero code).
    Other {
        /// Message type.
        msg_type: Icmpv4Message,
        /// Code.
        code: u8,
        /// The 4 bytes after the checksum.
        rest_of_header: u32,
        /// Length of the data.
        data_len: usize,
    },
}

impl Icmpv4Repr {
    /// Read a message header, checking length and checksum.
    pub fn parse<T: AsRef<[u8]>>(packet: &Icmpv4Packet<T>) -> Result<Self> {
        let r = Self::parse_ignoring_checksum(packet)?;
        if !packet.verify_checksum() {
            return Err(Error::BadChecksum {
                header: "ICMPv4",
                checksum: packet.checksum(),
            });
        }
        Ok(r)
    }

    /// Read a message header, checking its length only.
    pub fn parse_ignoring_checksum<T: AsRef<[u8]>>(packet: &Icmpv4Packet<T>) -> Result<Self> {
        packet.check_len()?;
        let data_len = packet.data().len();
        let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
        Ok(match (packet.msg_type(), packet.code()) {
            (Icmpv4Message::ECHO_REQUEST, 0) => Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data_len,
            },
            (Icmpv4Message::ECHO_REPLY, 0) => Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data_len,
            },
            (msg_type, code) => Icmpv4Repr::Other {
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

    /// Header plus data.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match *self {
                Icmpv4Repr::EchoRequest { data_len, .. }
                | Icmpv4Repr::EchoReply { data_len, .. }
                | Icmpv4Repr::Other { data_len, .. } => data_len,
            }
    }

    /// Write the header with a zero checksum. Write the data, then call
    /// [`Icmpv4Packet::fill_checksum`].
    ///
    /// # Panics
    /// If the packet's buffer is shorter than 8 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Icmpv4Packet<T>) {
        match *self {
            Icmpv4Repr::EchoRequest { ident, seq_no, .. }
            | Icmpv4Repr::EchoReply { ident, seq_no, .. } => {
                let t = if matches!(self, Icmpv4Repr::EchoRequest { .. }) {
                    Icmpv4Message::ECHO_REQUEST
                } else {
                    Icmpv4Message::ECHO_REPLY
                };
                packet.set_msg_type(t);
                packet.set_code(0);
                packet.set_echo_ident(ident);
                packet.set_echo_seq_no(seq_no);
            }
            Icmpv4Repr::Other {
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

impl fmt::Display for Icmpv4Repr {
    /// `icmp echo-request id I seq S len L`, or `icmp TYPE code C len L`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data_len,
            } => {
                write!(
                    f,
                    "icmp echo-request id {ident} seq {seq_no} len {data_len}"
                )
            }
            Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data_len,
            } => {
                write!(f, "icmp echo-reply id {ident} seq {seq_no} len {data_len}")
            }
            Icmpv4Repr::Other {
                msg_type,
                code,
                data_len,
                ..
            } => write!(f, "icmp {msg_type} code {code} len {data_len}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Echo request id 0x1234 seq 1 with data "abcd", checksum computed independently below.
    fn echo_bytes() -> Vec<u8> {
        let mut b = vec![8, 0, 0, 0, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd'];
        // Words: 0800 + 0000 + 1234 + 0001 + 6162 + 6364 = 0xdefb, so the checksum is 0x2104.
        b[2..4].copy_from_slice(&0x2104u16.to_be_bytes());
        b
    }

    #[test]
    fn parse_known_bytes() {
        let b = echo_bytes();
        let p = Icmpv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.data(), b"abcd");
        assert_eq!(
            Icmpv4Repr::parse(&p).unwrap(),
            Icmpv4Repr::EchoRequest {
                ident: 0x1234,
                seq_no: 1,
                data_len: 4
            }
        );
    }

    #[test]
    fn emit_gives_same_bytes() {
        let r = Icmpv4Repr::EchoRequest {
            ident: 0x1234,
            seq_no: 1,
            data_len: 4,
        };
        let mut b = vec![0xffu8; r.buffer_len()];
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        p.data_mut().copy_from_slice(b"abcd");
        p.fill_checksum();
        assert_eq!(b, echo_bytes());
    }

    #[test]
    fn other_messages_round_trip() {
        // Time exceeded, code 0, with 28 bytes of quoted datagram.
        let r = Icmpv4Repr::Other {
            msg_type: Icmpv4Message::TIME_EXCEEDED,
            code: 0,
            rest_of_header: 0,
            data_len: 28,
        };
        let mut b = vec![0u8; r.buffer_len()];
        let mut p = Icmpv4Packet::new_unchecked(&mut b[..]);
        r.emit(&mut p);
        p.data_mut()[0] = 0x45;
        p.fill_checksum();
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap(),
            r
        );
        assert_eq!(Icmpv4Message::TIME_EXCEEDED.to_string(), "time-exceeded");
    }

    #[test]
    fn echo_ident_rewrite_keeps_checksum_valid() {
        let mut b = echo_bytes();
        let mut p = Icmpv4Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!(p.set_echo_ident_incremental(0xfffe), 0x1234);
        assert!(p.verify_checksum());
        let incr = p.checksum();
        p.fill_checksum();
        assert_eq!(incr, p.checksum());
    }

    #[test]
    fn errors() {
        let b = echo_bytes();
        assert_eq!(
            Icmpv4Packet::new_checked(&b[..7]).unwrap_err(),
            Error::Truncated {
                header: "ICMPv4 header",
                len: 7,
                need: 8
            }
        );
        let mut b = echo_bytes();
        b[11] ^= 1;
        assert_eq!(
            Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&b[..]).unwrap()).unwrap_err(),
            Error::BadChecksum {
                header: "ICMPv4",
                checksum: 0x2104
            }
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let p = Icmpv4Packet::new_unchecked(&data[..]);
            if let Ok(r) = Icmpv4Repr::parse_ignoring_checksum(&p) {
                prop_assert_eq!(r.buffer_len(), data.len());
                let mut out = vec![0u8; data.len()];
                let mut q = Icmpv4Packet::new_unchecked(&mut out[..]);
                r.emit(&mut q);
                q.data_mut().copy_from_slice(p.data());
                q.set_checksum(p.checksum());
                prop_assert_eq!(out, data.clone());
            }
            let _ = Icmpv4Repr::parse(&p);
        }
    }
}
