//! IEEE 802.1Q (C-tag) and 802.1ad (S-tag) VLAN tags, and [`L2Header`], which reads a frame's whole
//! L2 header (addresses, up to two tags, final EtherType, L3 offset) in one pass.
//!
//! On the wire a tag is a TPID (0x8100, 0x88a8 or the legacy 0x9100) in the place of the EtherType,
//! followed by a 2-byte TCI (PCP, DEI, VID) and the next EtherType (IEEE 802.1Q-2018 §9.6). The view
//! [`VlanTag`] covers what follows the TPID — TCI and next EtherType — so it is the payload of an
//! [`crate::EthernetFrame`] (or of an outer `VlanTag`) whose EtherType is a TPID. Its setters let the
//! switch rewrite a tag in place; pushing and popping tags (moving bytes) is the switch's job.

use crate::error::{Error, Result};
use crate::ethernet::{EtherType, EthernetAddress};
use crate::field::be16;

mod field {
    use crate::field::*;
    pub const TCI: Field = 0..2;
    pub const ETHERTYPE: Field = 2..4;
    pub const PAYLOAD: Rest = 4..;
}

/// Largest VLAN ID; 0xFFF is reserved (IEEE 802.1Q-2018 Table 9-2).
pub const VID_MAX: u16 = 0x0fff;

/// A read/write view of a VLAN tag's TCI and next EtherType (the 4 bytes after a TPID).
#[derive(Debug, Clone)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Bytes of a tag after its TPID.
    pub const HEADER_LEN: usize = field::PAYLOAD.start;

    /// Wrap a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    /// Wrap a buffer after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let t = Self::new_unchecked(buffer);
        t.check_len()?;
        Ok(t)
    }

    /// Ensure TCI and EtherType are present; after this no accessor panics.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < Self::HEADER_LEN {
            Err(Error::TruncatedVlanTag { offset: 0, len })
        } else {
            Ok(())
        }
    }

    /// The wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The whole tag control information.
    pub fn tci(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TCI])
    }

    /// Priority code point (3 bits).
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN identifier (12 bits).
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MAX
    }

    /// EtherType of what follows the tag (another TPID for stacked tags).
    pub fn ethertype(&self) -> EtherType {
        EtherType(be16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }

    /// Bytes after the tag.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Set the whole TCI.
    pub fn set_tci(&mut self, tci: u16) {
        self.buffer.as_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }

    /// Set the PCP (only the low 3 bits of `pcp` are used).
    pub fn set_pcp(&mut self, pcp: u8) {
        let tci = (self.tci() & 0x1fff) | (u16::from(pcp & 7) << 13);
        self.set_tci(tci);
    }

    /// Set the DEI.
    pub fn set_dei(&mut self, dei: bool) {
        let tci = (self.tci() & !0x1000) | if dei { 0x1000 } else { 0 };
        self.set_tci(tci);
    }

    /// Set the VID (only the low 12 bits of `vid` are used).
    pub fn set_vid(&mut self, vid: u16) {
        let tci = (self.tci() & !VID_MAX) | (vid & VID_MAX);
        self.set_tci(tci);
    }

    /// Set the EtherType that follows the tag.
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }

    /// Mutable bytes after the tag.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// A VLAN tag's TCI and next EtherType as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
    /// EtherType after the tag.
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Read a tag (checking its length first).
    pub fn parse<T: AsRef<[u8]>>(tag: &VlanTag<T>) -> Result<Self> {
        tag.check_len()?;
        Ok(VlanRepr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        })
    }

    /// The TCI this repr encodes (PCP and VID masked to their widths).
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 7) << 13) | if self.dei { 0x1000 } else { 0 } | (self.vid & VID_MAX)
    }

    /// Bytes of the tag after the TPID (4).
    pub const fn header_len(&self) -> usize {
        VlanTag::<&[u8]>::HEADER_LEN
    }

    /// Bytes needed to emit (4).
    pub const fn buffer_len(&self) -> usize {
        self.header_len()
    }

    /// Write TCI and EtherType. PCP and VID are masked to 3 and 12 bits.
    ///
    /// # Panics
    /// If the tag's buffer is shorter than 4 bytes (use `new_checked`).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, tag: &mut VlanTag<T>) {
        tag.set_tci(self.tci());
        tag.set_ethertype(self.ethertype);
    }
}

/// One VLAN tag as found in a frame: its TPID and TCI fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct L2Tag {
    /// The TPID that introduced the tag (0x8100, 0x88a8 or 0x9100).
    pub tpid: EtherType,
    /// Priority code point.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier.
    pub vid: u16,
}

impl L2Tag {
    fn from_tci(tpid: EtherType, tci: u16) -> Self {
        L2Tag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & VID_MAX,
        }
    }

    /// The TCI of this tag.
    pub const fn tci(&self) -> u16 {
        ((self.pcp as u16 & 7) << 13) | if self.dei { 0x1000 } else { 0 } | (self.vid & VID_MAX)
    }
}

/// The L2 header of a frame read in one pass: addresses, up to two VLAN tags, the final
/// EtherType and where L3 starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct L2Header {
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// Source address.
    pub src_addr: EthernetAddress,
    /// First (outer) tag, if any: the S-tag of a Q-in-Q frame or the only tag.
    pub outer: Option<L2Tag>,
    /// Second (inner) tag, if any: the C-tag of a Q-in-Q frame.
    pub inner: Option<L2Tag>,
    /// The EtherType after all tags; below 0x0600 it is an 802.3 length (then `l3_offset` is where
    /// the LLC header starts).
    pub ethertype: EtherType,
    /// Offset of the first byte after the L2 header (14, 18 or 22).
    pub l3_offset: usize,
}

impl L2Header {
    /// Read the L2 header of `frame`.
    ///
    /// Errors: [`Error::Runt`] below 14 bytes, [`Error::TruncatedVlanTag`] when a TPID is not
    /// followed by 4 bytes, [`Error::TooManyVlanTags`] for a third TPID, and
    /// [`Error::BadLengthField`] when the final type/length is an 802.3 length (< 0x0600) that is
    /// above 1500 or above the bytes that follow (IEEE 802.3 §3.2.6; a shorter length is fine —
    /// the rest is padding to the minimum frame size).
    pub fn parse(frame: &[u8]) -> Result<L2Header> {
        let len = frame.len();
        if len < 14 {
            return Err(Error::Runt { len });
        }
        let mut addr = [0u8; 6];
        addr.copy_from_slice(&frame[0..6]);
        let dst_addr = EthernetAddress(addr);
        addr.copy_from_slice(&frame[6..12]);
        let src_addr = EthernetAddress(addr);
        let mut ethertype = EtherType(be16(&frame[12..14]));
        let mut offset = 14; // first byte after the current type field
        let mut tags: [Option<L2Tag>; 2] = [None, None];
        let mut n = 0;
        while ethertype.is_vlan_tpid() {
            if n == 2 {
                return Err(Error::TooManyVlanTags {
                    offset: offset - 2,
                    tpid: ethertype.0,
                });
            }
            let Some(tag) = frame.get(offset..offset + 4) else {
                return Err(Error::TruncatedVlanTag { offset, len });
            };
            tags[n] = Some(L2Tag::from_tci(ethertype, be16(&tag[0..2])));
            ethertype = EtherType(be16(&tag[2..4]));
            offset += 4;
            n += 1;
        }
        if ethertype.is_length() {
            // IEEE 802.3 §3.2.6: a length counts the MAC client data that follows.
            let available = len - offset;
            if ethertype.0 > EtherType::MAX_LENGTH || usize::from(ethertype.0) > available {
                return Err(Error::BadLengthField {
                    length: ethertype.0,
                    available,
                });
            }
        }
        Ok(L2Header {
            dst_addr,
            src_addr,
            outer: tags[0],
            inner: tags[1],
            ethertype,
            l3_offset: offset,
        })
    }

    /// Number of VLAN tags (0, 1 or 2).
    pub fn tag_count(&self) -> usize {
        usize::from(self.outer.is_some()) + usize::from(self.inner.is_some())
    }

    /// VID of the outer tag, if the frame is tagged.
    pub fn outer_vid(&self) -> Option<u16> {
        self.outer.map(|t| t.vid)
    }

    /// True when the final type field is an 802.3 length (an LLC frame).
    pub fn is_llc(&self) -> bool {
        self.ethertype.is_length()
    }

    /// Bytes of the L2 header this value describes (14 + 4 per tag).
    pub fn header_len(&self) -> usize {
        14 + 4 * self.tag_count()
    }

    /// Write the header (addresses, tags, EtherType) at the start of `buf`; returns the bytes
    /// written. An `inner` tag without an `outer` one is written as the only tag.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize> {
        let need = self.header_len();
        let Some(out) = buf.get_mut(..need) else {
            return Err(Error::Truncated {
                header: "L2 header",
                len: buf.len(),
                need,
            });
        };
        out[0..6].copy_from_slice(&self.dst_addr.0);
        out[6..12].copy_from_slice(&self.src_addr.0);
        let mut at = 12;
        for tag in [self.outer, self.inner].into_iter().flatten() {
            out[at..at + 2].copy_from_slice(&tag.tpid.0.to_be_bytes());
            out[at + 2..at + 4].copy_from_slice(&tag.tci().to_be_bytes());
            at += 4;
        }
        out[at..at + 2].copy_from_slice(&self.ethertype.0.to_be_bytes());
        Ok(need)
    }
}

impl core::fmt::Display for VlanRepr {
    /// `vlan VID pcp P[ dei] TYPE`.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "vlan {} pcp {}{} {}",
            self.vid,
            self.pcp,
            if self.dei { " dei" } else { "" },
            self.ethertype
        )
    }
}

impl core::fmt::Display for L2Header {
    /// `src > dst[ vlan OUTER[/INNER]] TYPE`, or `llc len N` for 802.3 frames.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} > {}", self.src_addr, self.dst_addr)?;
        if let Some(o) = self.outer {
            write!(f, " vlan {}", o.vid)?;
            if let Some(i) = self.inner {
                write!(f, "/{}", i.vid)?;
            }
        }
        if self.is_llc() {
            write!(f, " llc len {}", self.ethertype.0)
        } else {
            write!(f, " {}", self.ethertype)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

    fn frame(types: &[u8], total: usize) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&DST);
        f.extend_from_slice(&SRC);
        f.extend_from_slice(types);
        f.resize(total.max(f.len()), 0xee);
        f
    }

    #[test]
    fn tag_view_known_bytes_and_round_trip() {
        // PCP 5, DEI 1, VID 0x123, then IPv4.
        let bytes = [0xb1, 0x23, 0x08, 0x00, 0x45];
        let t = VlanTag::new_checked(&bytes[..]).unwrap();
        assert_eq!(
            (t.pcp(), t.dei(), t.vid(), t.ethertype()),
            (5, true, 0x123, EtherType::IPV4)
        );
        assert_eq!(t.payload(), &[0x45]);
        let r = VlanRepr::parse(&t).unwrap();
        assert_eq!(
            r,
            VlanRepr {
                pcp: 5,
                dei: true,
                vid: 0x123,
                ethertype: EtherType::IPV4
            }
        );
        let mut out = [0u8, 0, 0, 0, 0x45];
        r.emit(&mut VlanTag::new_unchecked(&mut out[..]));
        assert_eq!(out, bytes);
    }

    #[test]
    fn tag_setters_touch_only_their_bits() {
        let mut b = [0xb1, 0x23, 0x08, 0x00];
        let mut t = VlanTag::new_checked(&mut b[..]).unwrap();
        t.set_vid(0xabc);
        assert_eq!((t.pcp(), t.dei(), t.vid()), (5, true, 0xabc));
        t.set_pcp(2);
        assert_eq!((t.pcp(), t.dei(), t.vid()), (2, true, 0xabc));
        t.set_dei(false);
        assert_eq!((t.pcp(), t.dei(), t.vid()), (2, false, 0xabc));
        t.set_ethertype(EtherType::IPV6);
        assert_eq!(b, [0x4a, 0xbc, 0x86, 0xdd]);
    }

    #[test]
    fn tag_view_truncated() {
        let e = VlanTag::new_checked(&[0u8, 1, 2][..]).unwrap_err();
        assert_eq!(e.reason(), "truncated-vlan-tag");
    }

    #[test]
    fn untagged() {
        let f = frame(&[0x08, 0x00], 60);
        let h = L2Header::parse(&f).unwrap();
        assert_eq!(h.dst_addr, EthernetAddress(DST));
        assert_eq!(h.src_addr, EthernetAddress(SRC));
        assert_eq!(
            (h.outer, h.inner, h.ethertype, h.l3_offset),
            (None, None, EtherType::IPV4, 14)
        );
        assert_eq!(h.tag_count(), 0);
    }

    #[test]
    fn single_dot1q() {
        let f = frame(&[0x81, 0x00, 0x20, 0x64, 0x86, 0xdd], 60);
        let h = L2Header::parse(&f).unwrap();
        assert_eq!(
            h.outer,
            Some(L2Tag {
                tpid: EtherType::VLAN,
                pcp: 1,
                dei: false,
                vid: 100
            })
        );
        assert_eq!(h.inner, None);
        assert_eq!(
            (h.ethertype, h.l3_offset, h.outer_vid()),
            (EtherType::IPV6, 18, Some(100))
        );
    }

    #[test]
    fn qinq_each_tpid() {
        for outer in [0x88a8u16, 0x9100, 0x8100] {
            let o = outer.to_be_bytes();
            let f = frame(
                &[o[0], o[1], 0x00, 0x0a, 0x81, 0x00, 0xf0, 0x14, 0x08, 0x06],
                64,
            );
            let h = L2Header::parse(&f).unwrap();
            assert_eq!(
                h.outer,
                Some(L2Tag {
                    tpid: EtherType(outer),
                    pcp: 0,
                    dei: false,
                    vid: 10
                })
            );
            assert_eq!(
                h.inner,
                Some(L2Tag {
                    tpid: EtherType::VLAN,
                    pcp: 7,
                    dei: true,
                    vid: 20
                })
            );
            assert_eq!(
                (h.ethertype, h.l3_offset, h.tag_count()),
                (EtherType::ARP, 22, 2)
            );
            // Round trip through emit.
            let mut out = vec![0u8; 22];
            assert_eq!(h.emit(&mut out).unwrap(), 22);
            assert_eq!(out[..], f[..22]);
        }
    }

    #[test]
    fn runt() {
        for n in 0..14 {
            let f = frame(&[0x08, 0x00], 14);
            assert_eq!(L2Header::parse(&f[..n]), Err(Error::Runt { len: n }));
        }
    }

    #[test]
    fn truncated_tags() {
        // Outer TPID with no room for the TCI + type.
        let f = frame(&[0x81, 0x00, 0x00], 0);
        assert_eq!(
            L2Header::parse(&f),
            Err(Error::TruncatedVlanTag {
                offset: 14,
                len: 15
            })
        );
        // Second tag cut short.
        let f = frame(&[0x88, 0xa8, 0x00, 0x01, 0x81, 0x00, 0x00, 0x02, 0x08], 0);
        assert_eq!(
            L2Header::parse(&f),
            Err(Error::TruncatedVlanTag {
                offset: 18,
                len: 21
            })
        );
        assert_eq!(
            L2Header::parse(&f).unwrap_err().reason(),
            "truncated-vlan-tag"
        );
    }

    #[test]
    fn too_many_tags() {
        let f = frame(
            &[
                0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2, 0x81, 0x00, 0, 3, 0x08, 0x00,
            ],
            64,
        );
        assert_eq!(
            L2Header::parse(&f),
            Err(Error::TooManyVlanTags {
                offset: 20,
                tpid: 0x8100
            })
        );
        assert_eq!(
            L2Header::parse(&f).unwrap_err().reason(),
            "too-many-vlan-tags"
        );
        // Even when the third tag would itself be truncated, the count is the reason.
        assert_eq!(
            L2Header::parse(&f[..22]).unwrap_err().reason(),
            "too-many-vlan-tags"
        );
    }

    #[test]
    fn length_field() {
        // 802.3 length 46 with exactly 46 bytes: fine (LLC frame).
        let f = frame(&[0x00, 46], 60);
        let h = L2Header::parse(&f).unwrap();
        assert!(h.is_llc());
        assert_eq!(h.l3_offset, 14);
        // Shorter length than the bytes present: padding, fine.
        assert!(L2Header::parse(&frame(&[0x00, 3], 60)).is_ok());
        // Longer than the frame: lies.
        let f = frame(&[0x00, 47], 60);
        assert_eq!(
            L2Header::parse(&f),
            Err(Error::BadLengthField {
                length: 47,
                available: 46
            })
        );
        // Undefined range 1501..=1535.
        let f = frame(&[0x05, 0xdd], 1600);
        assert_eq!(
            L2Header::parse(&f).unwrap_err().reason(),
            "bad-length-field"
        );
        // Behind a tag, counted from after the tag.
        let f = frame(&[0x81, 0x00, 0, 5, 0x00, 43], 60);
        assert_eq!(
            L2Header::parse(&f),
            Err(Error::BadLengthField {
                length: 43,
                available: 42
            })
        );
    }

    #[test]
    fn emit_too_small_buffer_is_an_error() {
        let h = L2Header::parse(&frame(&[0x81, 0x00, 0, 5, 0x08, 0x00], 60)).unwrap();
        let mut b = [0u8; 17];
        assert_eq!(
            h.emit(&mut b),
            Err(Error::Truncated {
                header: "L2 header",
                len: 17,
                need: 18
            })
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(h) = L2Header::parse(&data) {
                prop_assert!(h.l3_offset <= data.len());
                prop_assert_eq!(h.l3_offset, h.header_len());
            }
        }

        #[test]
        fn parse_never_panics_tag_heavy(
            tpids in proptest::collection::vec(prop::sample::select(vec![0x8100u16, 0x88a8, 0x9100, 0x0800, 0x0010]), 0..5),
            tail in proptest::collection::vec(any::<u8>(), 0..8),
        ) {
            let mut f = Vec::from(&DST[..]);
            f.extend_from_slice(&SRC);
            for t in tpids {
                f.extend_from_slice(&t.to_be_bytes());
                f.extend_from_slice(&[0x00, 0x07]);
            }
            f.extend_from_slice(&tail);
            if let Ok(h) = L2Header::parse(&f) {
                let mut out = vec![0u8; h.header_len()];
                h.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &f[..h.header_len()]);
            }
        }
    }
}
