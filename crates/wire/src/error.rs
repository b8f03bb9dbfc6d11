//! The one error type of the crate: every way a header can be malformed, each with a stable
//! kebab-case [`Error::reason`] that the switch uses as a drop-reason name.

/// A header that cannot be read or does not follow its specification.
///
/// Every variant carries the offending value and the message says what would have been accepted.
/// [`Error::reason`] gives a stable, short name per kind (e.g. `"runt"`) for drop counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Fewer bytes than an Ethernet header (14).
    #[error("runt frame: {len} bytes, an Ethernet header needs at least 14")]
    Runt {
        /// Length of the frame.
        len: usize,
    },
    /// A TPID announced a VLAN tag but the frame ends before the tag's 4 bytes (TCI + EtherType).
    #[error("truncated VLAN tag at byte {offset}: the frame ends at byte {len}, a tag needs 4 bytes after its TPID")]
    TruncatedVlanTag {
        /// Offset of the tag's TCI in the frame.
        offset: usize,
        /// Length of the frame.
        len: usize,
    },
    /// A third VLAN tag: at most an outer (802.1ad / S-tag) and an inner (802.1Q / C-tag) are accepted.
    #[error("too many VLAN tags: a third tag (TPID {tpid:#06x}) at byte {offset}; at most 2 tags are accepted")]
    TooManyVlanTags {
        /// Offset of the third TPID in the frame.
        offset: usize,
        /// The third TPID.
        tpid: u16,
    },
    /// An IEEE 802.3 length field (type/length < 0x0600) that is not a valid length or claims more
    /// bytes than the frame carries (IEEE 802.3 §3.2.6).
    #[error("bad 802.3 length field {length}: {available} bytes follow the header; accepted: a length <= 1500 and <= the bytes that follow")]
    BadLengthField {
        /// The length field.
        length: u16,
        /// Bytes after the L2 header.
        available: usize,
    },
    /// The buffer is shorter than the (fixed or announced) header.
    #[error("truncated {header}: {len} bytes, at least {need} needed")]
    Truncated {
        /// Which header, e.g. `"IPv4 header"`.
        header: &'static str,
        /// Bytes available.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// The IP version nibble is not the expected one.
    #[error("bad IP version {version}: expected {expected}")]
    BadVersion {
        /// The version nibble found.
        version: u8,
        /// The version accepted here.
        expected: u8,
    },
    /// IPv4 IHL below 5 words (RFC 791 §3.1).
    #[error("bad IPv4 header length (IHL) {ihl}: accepted 5..=15 (32-bit words)")]
    BadHeaderLength {
        /// The IHL field.
        ihl: u8,
    },
    /// IPv4 total length shorter than the header or longer than the buffer (RFC 791 §3.1).
    #[error("bad IPv4 total length {total_len}: accepted {header_len}..={len} (header length..=bytes available)")]
    BadTotalLength {
        /// The total-length field.
        total_len: u16,
        /// The header length announced by IHL.
        header_len: usize,
        /// Bytes available.
        len: usize,
    },
    /// IPv6 payload length longer than the buffer (RFC 8200 §3).
    #[error(
        "bad IPv6 payload length {payload_len}: only {available} bytes follow the fixed header"
    )]
    BadPayloadLength {
        /// The payload-length field.
        payload_len: u16,
        /// Bytes after the fixed header.
        available: usize,
    },
    /// UDP length field below 8 or beyond the buffer (RFC 768).
    #[error("bad UDP length {length}: accepted 8..={len} (header size..=bytes available)")]
    BadUdpLength {
        /// The length field.
        length: u16,
        /// Bytes available.
        len: usize,
    },
    /// TCP data offset below 5 words (RFC 9293 §3.1).
    #[error("bad TCP data offset {data_offset}: accepted 5..=15 (32-bit words)")]
    BadDataOffset {
        /// The data-offset field.
        data_offset: u8,
    },
    /// A checksum that does not verify.
    #[error("bad {header} checksum {checksum:#06x}: the one's-complement sum over the covered bytes must be 0xffff")]
    BadChecksum {
        /// Which header, e.g. `"IPv4 header"`.
        header: &'static str,
        /// The checksum field found.
        checksum: u16,
    },
    /// An ARP packet that is not Ethernet/IPv4 (RFC 826).
    #[error("unsupported ARP packet: hardware type {hardware_type}, protocol type {protocol_type:#06x}, lengths {hardware_len}/{protocol_len}; accepted: Ethernet (1) / IPv4 (0x0800) with lengths 6/4")]
    UnsupportedArp {
        /// Hardware type field.
        hardware_type: u16,
        /// Protocol type field.
        protocol_type: u16,
        /// Hardware address length.
        hardware_len: u8,
        /// Protocol address length.
        protocol_len: u8,
    },
    /// A TCP option whose length is below 2, runs past the option area, or does not match its
    /// kind (RFC 9293 §3.2: MSS 4, window scale 3, SACK-permitted 2, SACK 2+8n, timestamps 10).
    #[error("bad TCP option kind {kind} at option byte {offset}: length {len} (0 = missing) is below 2, runs past the header, or does not fit the kind")]
    BadTcpOption {
        /// Option kind.
        kind: u8,
        /// Option length byte (0 when missing).
        len: u8,
        /// Offset in the option area.
        offset: usize,
    },
    /// An NDP option with length 0 or running past the message (RFC 4861 §4.6).
    #[error("bad NDP option type {option_type} at message byte {offset}: length {len} (units of 8 bytes) is 0 or runs past the message")]
    BadNdpOption {
        /// Option type.
        option_type: u8,
        /// Option length in units of 8 bytes (0 when missing).
        len: u8,
        /// Offset in the ICMPv6 message.
        offset: usize,
    },
}

impl Error {
    /// All reason names that [`Error::reason`] can return, in a stable order (for registering drop
    /// reasons up front).
    pub const REASONS: &'static [&'static str] = &[
        "runt",
        "truncated-vlan-tag",
        "too-many-vlan-tags",
        "bad-length-field",
        "truncated",
        "bad-ip-version",
        "bad-header-length",
        "bad-total-length",
        "bad-payload-length",
        "bad-udp-length",
        "bad-tcp-data-offset",
        "bad-checksum",
        "unsupported-arp",
        "bad-tcp-option",
        "bad-ndp-option",
    ];

    /// A short, stable, kebab-case name of the error kind, used as a drop reason.
    pub const fn reason(&self) -> &'static str {
        match self {
            Error::Runt { .. } => "runt",
            Error::TruncatedVlanTag { .. } => "truncated-vlan-tag",
            Error::TooManyVlanTags { .. } => "too-many-vlan-tags",
            Error::BadLengthField { .. } => "bad-length-field",
            Error::Truncated { .. } => "truncated",
            Error::BadVersion { .. } => "bad-ip-version",
            Error::BadHeaderLength { .. } => "bad-header-length",
            Error::BadTotalLength { .. } => "bad-total-length",
            Error::BadPayloadLength { .. } => "bad-payload-length",
            Error::BadUdpLength { .. } => "bad-udp-length",
            Error::BadDataOffset { .. } => "bad-tcp-data-offset",
            Error::BadChecksum { .. } => "bad-checksum",
            Error::UnsupportedArp { .. } => "unsupported-arp",
            Error::BadTcpOption { .. } => "bad-tcp-option",
            Error::BadNdpOption { .. } => "bad-ndp-option",
        }
    }

    /// Index of [`Error::reason`] in [`Error::REASONS`].
    pub fn reason_index(&self) -> usize {
        let r = self.reason();
        // REASONS lists every name reason() returns (checked by a test), so this always finds it.
        Error::REASONS.iter().position(|x| *x == r).unwrap_or(0)
    }
}

/// Result with the crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_listed_once_and_kebab_case() {
        let samples = [
            Error::Runt { len: 3 },
            Error::TruncatedVlanTag {
                offset: 14,
                len: 16,
            },
            Error::TooManyVlanTags {
                offset: 22,
                tpid: 0x8100,
            },
            Error::BadLengthField {
                length: 100,
                available: 46,
            },
            Error::Truncated {
                header: "UDP header",
                len: 3,
                need: 8,
            },
            Error::BadVersion {
                version: 6,
                expected: 4,
            },
            Error::BadHeaderLength { ihl: 4 },
            Error::BadTotalLength {
                total_len: 10,
                header_len: 20,
                len: 40,
            },
            Error::BadPayloadLength {
                payload_len: 9,
                available: 0,
            },
            Error::BadUdpLength { length: 7, len: 8 },
            Error::BadDataOffset { data_offset: 4 },
            Error::BadChecksum {
                header: "IPv4 header",
                checksum: 1,
            },
            Error::UnsupportedArp {
                hardware_type: 6,
                protocol_type: 0x86dd,
                hardware_len: 6,
                protocol_len: 16,
            },
            Error::BadTcpOption {
                kind: 2,
                len: 3,
                offset: 0,
            },
            Error::BadNdpOption {
                option_type: 1,
                len: 0,
                offset: 24,
            },
        ];
        assert_eq!(samples.len(), Error::REASONS.len());
        for (i, e) in samples.iter().enumerate() {
            assert_eq!(e.reason(), Error::REASONS[i]);
            assert_eq!(e.reason_index(), i);
            assert!(e
                .reason()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-'));
        }
    }

    #[test]
    fn messages_name_the_value_and_what_is_accepted() {
        let m = Error::BadHeaderLength { ihl: 3 }.to_string();
        assert!(m.contains('3') && m.contains("5..=15"), "{m}");
        let m = Error::BadLengthField {
            length: 1400,
            available: 46,
        }
        .to_string();
        assert!(m.contains("1400") && m.contains("46"), "{m}");
    }
}
