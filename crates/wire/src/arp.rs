//! ARP (RFC 826): the view [`ArpPacket`] over any hardware/protocol address lengths, and the
//! value [`ArpRepr`] for the only combination the switch speaks, Ethernet + IPv4.

use core::fmt;
use std::net::Ipv4Addr;

use crate::error::{Error, Result};
use crate::ethernet::{EtherType, EthernetAddress};
use crate::field::{be16, be32};

mod field {
    use crate::field::*;
    pub const HTYPE: Field = 0..2;
    pub const PTYPE: Field = 2..4;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: Field = 6..8;
    pub const ADDRESSES: usize = 8;
}

/// Length of the fixed part (before the addresses).
pub const FIXED_LEN: usize = field::ADDRESSES;
/// Hardware type for Ethernet (RFC 826, IANA "Hardware Types").
pub const HARDWARE_ETHERNET: u16 = 1;

/// An ARP operation code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    /// Request (RFC 826).
    pub const REQUEST: ArpOperation = ArpOperation(1);
    /// Reply (RFC 826).
    pub const REPLY: ArpOperation = ArpOperation(2);
}

impl fmt::Display for ArpOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            1 => f.write_str("request"),
            2 => f.write_str("reply"),
            n => write!(f, "op-{n}"),
        }
    }
}

/// A read/write view of an ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Ensure the fixed part and the four addresses (of the announced lengths) fit; after this no
    /// accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < FIXED_LEN {
            return Err(Error::Truncated {
                header: "ARP header",
                len,
                need: FIXED_LEN,
            });
        }
        let need = self.packet_len();
        if len < need {
            return Err(Error::Truncated {
                header: "ARP addresses",
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

    /// Hardware type (1 = Ethernet).
    pub fn hardware_type(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::HTYPE])
    }

    /// Protocol type (an EtherType, 0x0800 for IPv4).
    pub fn protocol_type(&self) -> EtherType {
        EtherType(be16(&self.buffer.as_ref()[field::PTYPE]))
    }

    /// Hardware address length.
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }

    /// Protocol address length.
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }

    /// Operation.
    pub fn operation(&self) -> ArpOperation {
        ArpOperation(be16(&self.buffer.as_ref()[field::OPER]))
    }

    /// Length of the packet implied by the address lengths.
    pub fn packet_len(&self) -> usize {
        FIXED_LEN + 2 * (usize::from(self.hardware_len()) + usize::from(self.protocol_len()))
    }

    fn ranges(&self) -> [core::ops::Range<usize>; 4] {
        let h = usize::from(self.hardware_len());
        let p = usize::from(self.protocol_len());
        let sha = FIXED_LEN;
        let spa = sha + h;
        let tha = spa + p;
        let tpa = tha + h;
        [sha..spa, spa..tha, tha..tpa, tpa..tpa + p]
    }

    /// Sender hardware address bytes.
    pub fn source_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[0].clone()]
    }

    /// Sender protocol address bytes.
    pub fn source_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[1].clone()]
    }

    /// Target hardware address bytes.
    pub fn target_hardware_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[2].clone()]
    }

    /// Target protocol address bytes.
    pub fn target_protocol_addr(&self) -> &[u8] {
        &self.buffer.as_ref()[self.ranges()[3].clone()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Set the hardware type.
    pub fn set_hardware_type(&mut self, v: u16) {
        self.buffer.as_mut()[field::HTYPE].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the protocol type.
    pub fn set_protocol_type(&mut self, v: EtherType) {
        self.buffer.as_mut()[field::PTYPE].copy_from_slice(&v.0.to_be_bytes());
    }

    /// Set the hardware address length.
    pub fn set_hardware_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::HLEN] = v;
    }

    /// Set the protocol address length.
    pub fn set_protocol_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::PLEN] = v;
    }

    /// Set the operation.
    pub fn set_operation(&mut self, v: ArpOperation) {
        self.buffer.as_mut()[field::OPER].copy_from_slice(&v.0.to_be_bytes());
    }

    /// Set the sender hardware address (`a` must be `hardware_len` bytes).
    pub fn set_source_hardware_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[0].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    /// Set the sender protocol address (`a` must be `protocol_len` bytes).
    pub fn set_source_protocol_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[1].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    /// Set the target hardware address (`a` must be `hardware_len` bytes).
    pub fn set_target_hardware_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[2].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }

    /// Set the target protocol address (`a` must be `protocol_len` bytes).
    pub fn set_target_protocol_addr(&mut self, a: &[u8]) {
        let r = self.ranges()[3].clone();
        self.buffer.as_mut()[r].copy_from_slice(a);
    }
}

/// An Ethernet/IPv4 ARP packet as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: ArpOperation,
    /// Sender MAC.
    pub source_hardware_addr: EthernetAddress,
    /// Sender IPv4 address.
    pub source_protocol_addr: Ipv4Addr,
    /// Target MAC (zero in requests).
    pub target_hardware_addr: EthernetAddress,
    /// Target IPv4 address.
    pub target_protocol_addr: Ipv4Addr,
}

impl ArpRepr {
    /// Length of an Ethernet/IPv4 ARP packet.
    pub const PACKET_LEN: usize = 28;

    /// Read an Ethernet/IPv4 ARP packet; other hardware/protocol types are
    /// [`Error::UnsupportedArp`].
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<Self> {
        packet.check_len()?;
        if packet.hardware_type() != HARDWARE_ETHERNET
            || packet.protocol_type() != EtherType::IPV4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(Error::UnsupportedArp {
                hardware_type: packet.hardware_type(),
                protocol_type: packet.protocol_type().0,
                hardware_len: packet.hardware_len(),
                protocol_len: packet.protocol_len(),
            });
        }
        let mac = |b: &[u8]| EthernetAddress::from_slice(b).unwrap_or_default();
        Ok(ArpRepr {
            operation: packet.operation(),
            source_hardware_addr: mac(packet.source_hardware_addr()),
            source_protocol_addr: Ipv4Addr::from(be32(packet.source_protocol_addr())),
            target_hardware_addr: mac(packet.target_hardware_addr()),
            target_protocol_addr: Ipv4Addr::from(be32(packet.target_protocol_addr())),
        })
    }

    /// Fixed part plus addresses (28).
    pub const fn header_len(&self) -> usize {
        Self::PACKET_LEN
    }

    /// Bytes needed to emit (28).
    pub const fn buffer_len(&self) -> usize {
        Self::PACKET_LEN
    }

    /// Write the packet.
    ///
    /// # Panics
    /// If the packet's buffer is shorter than 28 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_hardware_type(HARDWARE_ETHERNET);
        packet.set_protocol_type(EtherType::IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_source_hardware_addr(&self.source_hardware_addr.0);
        packet.set_source_protocol_addr(&self.source_protocol_addr.octets());
        packet.set_target_hardware_addr(&self.target_hardware_addr.0);
        packet.set_target_protocol_addr(&self.target_protocol_addr.octets());
    }
}

impl fmt::Display for ArpRepr {
    /// `request who-has T tell S (MAC)` / `reply S is-at MAC`, as tcpdump says it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operation {
            ArpOperation::REQUEST => write!(
                f,
                "arp request who-has {} tell {} ({})",
                self.target_protocol_addr, self.source_protocol_addr, self.source_hardware_addr
            ),
            ArpOperation::REPLY => {
                write!(
                    f,
                    "arp reply {} is-at {}",
                    self.source_protocol_addr, self.source_hardware_addr
                )
            }
            op => write!(
                f,
                "arp {op} {} > {}",
                self.source_protocol_addr, self.target_protocol_addr
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Who has 10.0.0.2? Tell 10.0.0.1 (02:00:00:00:00:01).
    static REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // fixed
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1, // sender
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 10, 0, 0, 2, // target
    ];

    fn repr() -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::REQUEST,
            source_hardware_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
            source_protocol_addr: Ipv4Addr::new(10, 0, 0, 1),
            target_hardware_addr: EthernetAddress::ZERO,
            target_protocol_addr: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    #[test]
    fn parse_known_bytes() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.operation(), ArpOperation::REQUEST);
        assert_eq!(p.target_protocol_addr(), &[10, 0, 0, 2]);
        assert_eq!(ArpRepr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn emit_gives_same_bytes() {
        let mut buf = [0xffu8; 28];
        repr().emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            ArpPacket::new_checked(&REQUEST[..7]).unwrap_err(),
            Error::Truncated {
                header: "ARP header",
                len: 7,
                need: 8
            }
        );
        assert_eq!(
            ArpPacket::new_checked(&REQUEST[..27]).unwrap_err(),
            Error::Truncated {
                header: "ARP addresses",
                len: 27,
                need: 28
            }
        );
    }

    #[test]
    fn unsupported() {
        let mut b = REQUEST;
        b[5] = 16; // IPv6-length protocol addresses, with enough bytes present
        let mut v = b.to_vec();
        v.resize(8 + 2 * (6 + 16), 0);
        let p = ArpPacket::new_checked(&v[..]).unwrap();
        assert_eq!(p.target_protocol_addr().len(), 16);
        assert_eq!(
            ArpRepr::parse(&p).unwrap_err(),
            Error::UnsupportedArp {
                hardware_type: 1,
                protocol_type: 0x0800,
                hardware_len: 6,
                protocol_len: 16
            }
        );
        let mut b = REQUEST;
        b[1] = 6; // IEEE 802 hardware type
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_unchecked(&b[..]))
                .unwrap_err()
                .reason(),
            "unsupported-arp"
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let p = ArpPacket::new_unchecked(&data[..]);
            if p.check_len().is_ok() {
                let _ = (p.source_hardware_addr(), p.source_protocol_addr(), p.target_hardware_addr(), p.target_protocol_addr());
            }
            if let Ok(r) = ArpRepr::parse(&p) {
                let mut out = [0u8; 28];
                r.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
                prop_assert_eq!(&out[..], &data[..28]);
            }
        }
    }
}
