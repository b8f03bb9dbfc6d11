//! Ethernet II frames (IEEE 802.3 §3.2 with the DIX type interpretation of the type/length field):
//! [`EthernetAddress`], [`EtherType`], the zero-copy view [`EthernetFrame`] and the value
//! [`EthernetRepr`].
//!
//! The view covers destination, source and type/length; the payload starts right after. VLAN tags
//! live in the payload of a frame whose EtherType is a TPID (see [`crate::vlan`]).

use core::fmt;
use core::str::FromStr;

use crate::error::{Error, Result};

/// A 48-bit MAC address (IEEE 802-2014 §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// The broadcast address ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);
    /// The all-zeros address (not valid as a source).
    pub const ZERO: EthernetAddress = EthernetAddress([0; 6]);

    /// The address from its 6 octets.
    pub const fn new(octets: [u8; 6]) -> Self {
        EthernetAddress(octets)
    }

    /// The address from the first 6 bytes of `bytes`, or `None` if there are fewer.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        let b: [u8; 6] = bytes.get(..6)?.try_into().ok()?;
        Some(EthernetAddress(b))
    }

    /// The 6 octets.
    pub const fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }

    /// ff:ff:ff:ff:ff:ff.
    pub fn is_broadcast(&self) -> bool {
        self.0 == [0xff; 6]
    }

    /// Group bit (I/G, least significant bit of the first octet) set; broadcast included.
    pub const fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Individual address (group bit clear).
    pub const fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }

    /// Locally administered (U/L bit, second least significant bit of the first octet, set).
    pub const fn is_local(&self) -> bool {
        self.0[0] & 0x02 != 0
    }

    /// The address as a `u64` (upper 16 bits zero), handy as a hash-table key.
    pub const fn to_u64(&self) -> u64 {
        let b = self.0;
        (b[0] as u64) << 40
            | (b[1] as u64) << 32
            | (b[2] as u64) << 24
            | (b[3] as u64) << 16
            | (b[4] as u64) << 8
            | b[5] as u64
    }
}

impl From<[u8; 6]> for EthernetAddress {
    fn from(b: [u8; 6]) -> Self {
        EthernetAddress(b)
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// A MAC address string that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid MAC address {value:?}: expected six two-digit hex octets separated by ':' or '-', like aa:bb:cc:dd:ee:ff")]
pub struct AddressParseError {
    /// The rejected text.
    pub value: String,
}

impl FromStr for EthernetAddress {
    type Err = AddressParseError;

    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let err = || AddressParseError {
            value: s.to_string(),
        };
        let sep = if s.contains(':') { ':' } else { '-' };
        let mut out = [0u8; 6];
        let mut n = 0;
        for part in s.split(sep) {
            if n == 6 || part.len() != 2 || !part.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(err());
            }
            out[n] = u8::from_str_radix(part, 16).map_err(|_| err())?;
            n += 1;
        }
        if n != 6 {
            return Err(err());
        }
        Ok(EthernetAddress(out))
    }
}

/// The EtherType (or, below 0x0600, the IEEE 802.3 length) of a frame or tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4 (RFC 894).
    pub const IPV4: EtherType = EtherType(0x0800);
    /// ARP (RFC 826).
    pub const ARP: EtherType = EtherType(0x0806);
    /// IEEE 802.1Q customer VLAN tag (C-tag) TPID.
    pub const VLAN: EtherType = EtherType(0x8100);
    /// IEEE 802.1ad service VLAN tag (S-tag) TPID, "Q-in-Q".
    pub const QINQ: EtherType = EtherType(0x88a8);
    /// Pre-standard Q-in-Q TPID still used by some equipment.
    pub const QINQ_LEGACY: EtherType = EtherType(0x9100);
    /// IPv6 (RFC 2464).
    pub const IPV6: EtherType = EtherType(0x86dd);
    /// Smallest value that is a type rather than an 802.3 length (IEEE 802.3 §3.2.6).
    pub const MIN_TYPE: u16 = 0x0600;
    /// Largest valid 802.3 length value (IEEE 802.3 §3.2.6).
    pub const MAX_LENGTH: u16 = 1500;

    /// True for the TPIDs this crate treats as a VLAN tag: 0x8100, 0x88a8, 0x9100.
    pub const fn is_vlan_tpid(self) -> bool {
        matches!(self.0, 0x8100 | 0x88a8 | 0x9100)
    }

    /// True when the field is an 802.3 length, not a type (value < 0x0600, IEEE 802.3 §3.2.6).
    pub const fn is_length(self) -> bool {
        self.0 < Self::MIN_TYPE
    }

    /// Short name of well-known types, `None` otherwise.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0x0800 => "ipv4",
            0x0806 => "arp",
            0x8100 => "802.1q",
            0x88a8 => "802.1ad",
            0x9100 => "qinq-legacy",
            0x86dd => "ipv6",
            _ => return None,
        })
    }
}

impl From<u16> for EtherType {
    fn from(v: u16) -> Self {
        EtherType(v)
    }
}

impl From<EtherType> for u16 {
    fn from(v: EtherType) -> Self {
        v.0
    }
}

impl fmt::Display for EtherType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{:#06x}", self.0),
        }
    }
}

mod field {
    use crate::field::*;
    pub const DESTINATION: Field = 0..6;
    pub const SOURCE: Field = 6..12;
    pub const ETHERTYPE: Field = 12..14;
    pub const PAYLOAD: Rest = 14..;
}

/// A read/write view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Length of the Ethernet II header.
    pub const HEADER_LEN: usize = field::PAYLOAD.start;

    /// Wrap a buffer without checking its length; accessors may panic until [`Self::check_len`] passes.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let f = Self::new_unchecked(buffer);
        f.check_len()?;
        Ok(f)
    }

    /// Ensure the buffer holds the 14-byte header; after this no accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::HEADER_LEN {
            Err(Error::Runt { len })
        } else {
            Ok(())
        }
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::DESTINATION]);
        EthernetAddress(a)
    }

    /// Source address.
    pub fn src_addr(&self) -> EthernetAddress {
        let mut a = [0; 6];
        a.copy_from_slice(&self.buffer.as_ref()[field::SOURCE]);
        EthernetAddress(a)
    }

    /// Type/length field.
    pub fn ethertype(&self) -> EtherType {
        EtherType(crate::field::be16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// Bytes after the header (a VLAN tag's TCI when the EtherType is a TPID).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Set the destination address.
    pub fn set_dst_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }

    /// Set the source address.
    pub fn set_src_addr(&mut self, a: EthernetAddress) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }

    /// Set the type/length field.
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }

    /// Mutable bytes after the header.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// An Ethernet II header as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// Type/length field.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Read the header of a frame (checking its length first).
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<Self> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// Header length (14).
    pub const fn header_len(&self) -> usize {
        EthernetFrame::<&[u8]>::HEADER_LEN
    }

    /// Bytes needed to emit the header (14).
    pub const fn buffer_len(&self) -> usize {
        self.header_len()
    }

    /// Write the header into a frame.
    ///
    /// # Panics
    /// If the frame's buffer is shorter than [`Self::buffer_len`] (use `new_checked`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

impl fmt::Display for EthernetRepr {
    /// `src > dst type`, e.g. `02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff arp`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} > {} {}",
            self.src_addr, self.dst_addr, self.ethertype
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    static FRAME: [u8; 18] = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // dst
        0x11, 0x12, 0x13, 0x14, 0x15, 0x16, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb, 0xcc, 0xdd, // payload
    ];

    fn repr() -> EthernetRepr {
        EthernetRepr {
            dst_addr: EthernetAddress([1, 2, 3, 4, 5, 6]),
            src_addr: EthernetAddress([0x11, 0x12, 0x13, 0x14, 0x15, 0x16]),
            ethertype: EtherType::IPV4,
        }
    }

    #[test]
    fn parse_known_bytes() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), EthernetAddress([1, 2, 3, 4, 5, 6]));
        assert_eq!(f.ethertype(), EtherType::IPV4);
        assert_eq!(f.payload(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(EthernetRepr::parse(&f).unwrap(), repr());
    }

    #[test]
    fn emit_gives_same_bytes() {
        let mut buf = [0u8; 18];
        buf[14..].copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        repr().emit(&mut f);
        assert_eq!(buf, FRAME);
        assert_eq!(repr().buffer_len(), 14);
    }

    #[test]
    fn runt_is_rejected() {
        assert_eq!(
            EthernetFrame::new_checked(&FRAME[..13]).unwrap_err(),
            Error::Runt { len: 13 }
        );
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_unchecked(&FRAME[..0]))
                .unwrap_err()
                .reason(),
            "runt"
        );
    }

    #[test]
    fn address_classes() {
        let b = EthernetAddress::BROADCAST;
        assert!(b.is_broadcast() && b.is_multicast() && !b.is_unicast());
        let m = EthernetAddress([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert!(m.is_multicast() && !m.is_broadcast() && !m.is_local());
        let l = EthernetAddress([0x02, 0, 0, 0, 0, 1]);
        assert!(l.is_unicast() && l.is_local());
        let u = EthernetAddress([0x00, 0x1b, 0x21, 1, 2, 3]);
        assert!(u.is_unicast() && !u.is_local());
        assert_eq!(u.to_u64(), 0x001b_2101_0203);
    }

    #[test]
    fn address_display_and_parse() {
        let a = EthernetAddress([0xaa, 0xbb, 0xcc, 0x0d, 0xee, 0xff]);
        assert_eq!(a.to_string(), "aa:bb:cc:0d:ee:ff");
        assert_eq!("aa:bb:cc:0d:ee:ff".parse::<EthernetAddress>().unwrap(), a);
        assert_eq!("AA-BB-CC-0D-EE-FF".parse::<EthernetAddress>().unwrap(), a);
        for bad in [
            "",
            "aa:bb:cc:dd:ee",
            "aa:bb:cc:dd:ee:ff:00",
            "aa:bb:cc:dd:ee:f",
            "aa:bb:cc:dd:ee:fg",
            "aa:bb-cc:dd:ee:ff",
            "+a:bb:cc:dd:ee:ff",
        ] {
            let e = bad.parse::<EthernetAddress>().unwrap_err();
            assert_eq!(e.value, bad);
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn ethertype_classes() {
        assert!(
            EtherType::VLAN.is_vlan_tpid()
                && EtherType::QINQ.is_vlan_tpid()
                && EtherType::QINQ_LEGACY.is_vlan_tpid()
        );
        assert!(!EtherType::IPV4.is_vlan_tpid());
        assert!(EtherType(1500).is_length() && !EtherType(0x0600).is_length());
        assert_eq!(EtherType::IPV6.to_string(), "ipv6");
        assert_eq!(EtherType(0x1234).to_string(), "0x1234");
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let f = EthernetFrame::new_unchecked(&data[..]);
            if let Ok(r) = EthernetRepr::parse(&f) {
                prop_assert_eq!(r.ethertype, f.ethertype());
                prop_assert_eq!(f.payload().len(), data.len() - 14);
            }
        }

        #[test]
        fn address_display_parse_round_trip(b in any::<[u8; 6]>()) {
            let a = EthernetAddress(b);
            prop_assert_eq!(a.to_string().parse::<EthernetAddress>().unwrap(), a);
        }
    }
}
