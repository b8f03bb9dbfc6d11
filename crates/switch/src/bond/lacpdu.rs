//! LACPDUs: the Link Aggregation Control Protocol's frames (IEEE 802.1AX-2014 §6.4.2.3, the same
//! layout as IEEE 802.3ad-2000 §43.4.2.2 that Linux's `bond_3ad.c` and VPP's `src/plugins/lacp`
//! speak).
//!
//! A LACPDU is an Ethernet frame to the Slow_Protocols_Multicast address [`SLOW_PROTOCOLS_MAC`]
//! (`01:80:c2:00:00:02`, never forwarded by a bridge, IEEE 802.1Q-2018 Table 8-1) with EtherType
//! [`SLOW_PROTOCOLS_ETHERTYPE`] (0x8809), subtype 1 (LACP), version 1, then three TLVs (actor
//! information 20 bytes, partner information 20 bytes, collector information 16 bytes), a
//! terminator TLV and 50 reserved bytes: 110 bytes after the Ethernet header ([`LACPDU_LEN`]).
//!
//! [`Lacpdu::parse`] reads the bytes after the Ethernet header and rejects anything that does not
//! follow that layout with a [`LacpError`] naming the field, the value and what is accepted;
//! [`Lacpdu::emit`] writes them; [`Lacpdu::build_frame`] writes a whole frame. Version numbers above
//! 1 are accepted (§6.4.2.3 f: a receiver processes the fields it knows).

use vecswitch_wire::{EtherType, EthernetAddress};

/// The Slow_Protocols_Multicast address LACPDUs are sent to (IEEE 802.1AX-2014 §6.2.11.2).
pub const SLOW_PROTOCOLS_MAC: EthernetAddress =
    EthernetAddress([0x01, 0x80, 0xc2, 0x00, 0x00, 0x02]);
/// The Slow Protocols EtherType (IEEE 802.3 Annex 57A).
pub const SLOW_PROTOCOLS_ETHERTYPE: EtherType = EtherType(0x8809);
/// The Slow Protocols subtype of LACP (IEEE 802.3 Table 57A–3).
pub const LACP_SUBTYPE: u8 = 1;
/// The LACP version this module writes.
pub const LACP_VERSION: u8 = 1;
/// Bytes of a LACPDU after the Ethernet header.
pub const LACPDU_LEN: usize = 110;
/// Bytes of a whole LACPDU frame (Ethernet header included, FCS excluded).
pub const LACPDU_FRAME_LEN: usize = 14 + LACPDU_LEN;

/// TLV types and lengths (§6.4.2.3).
const ACTOR_TLV: (u8, u8) = (0x01, 20);
const PARTNER_TLV: (u8, u8) = (0x02, 20);
const COLLECTOR_TLV: (u8, u8) = (0x03, 16);
const TERMINATOR_TLV: (u8, u8) = (0x00, 0);

/// A LACPDU that cannot be read: the field, the value found and what is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LacpError {
    /// Fewer bytes than a LACPDU.
    #[error("truncated LACPDU: {len} bytes after the Ethernet header, a LACPDU has {LACPDU_LEN}")]
    Truncated {
        /// Bytes available.
        len: usize,
    },
    /// A field with a value the layout does not allow.
    #[error("bad LACPDU {field} {value:#04x}: accepted {accepted}")]
    BadField {
        /// The field, e.g. `"subtype"`, `"actor TLV type"`.
        field: &'static str,
        /// The value found.
        value: u8,
        /// What is accepted.
        accepted: &'static str,
    },
}

/// The state octet of an actor or partner (§6.4.2.3 items o and y): eight flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LacpState(pub u8);

impl LacpState {
    /// LACP_Activity: active LACP (1) or passive (0).
    pub const ACTIVITY: u8 = 1 << 0;
    /// LACP_Timeout: short timeout (1, fast periodic) or long (0).
    pub const TIMEOUT: u8 = 1 << 1;
    /// Aggregation: the link may be aggregated (1) or is individual (0).
    pub const AGGREGATION: u8 = 1 << 2;
    /// Synchronization: the link is allocated to the right aggregator.
    pub const SYNCHRONIZATION: u8 = 1 << 3;
    /// Collecting: collection of incoming frames is enabled.
    pub const COLLECTING: u8 = 1 << 4;
    /// Distributing: distribution of outgoing frames is enabled.
    pub const DISTRIBUTING: u8 = 1 << 5;
    /// Defaulted: the partner information is the administrative default, not received.
    pub const DEFAULTED: u8 = 1 << 6;
    /// Expired: the receive machine is in the EXPIRED state.
    pub const EXPIRED: u8 = 1 << 7;

    /// Whether every bit of `mask` is set.
    #[inline]
    pub const fn has(self, mask: u8) -> bool {
        self.0 & mask == mask
    }

    /// Sets or clears the bits of `mask`.
    #[inline]
    pub fn set(&mut self, mask: u8, on: bool) {
        if on {
            self.0 |= mask;
        } else {
            self.0 &= !mask;
        }
    }

    /// The flags set, as Linux's `/proc/net/bonding` and VPP's `show lacp` name them
    /// (`activity,timeout,aggregation,...`).
    pub fn names(self) -> Vec<&'static str> {
        const NAMES: [&str; 8] = [
            "activity",
            "short-timeout",
            "aggregation",
            "synchronization",
            "collecting",
            "distributing",
            "defaulted",
            "expired",
        ];
        (0..8)
            .filter(|b| self.0 & (1 << b) != 0)
            .map(|b| NAMES[b])
            .collect()
    }
}

/// Actor or partner information (§6.4.2.3 items e–o, p–y).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct LacpInfo {
    /// System priority (lower wins the selection of which end decides).
    pub system_priority: u16,
    /// System identifier: a MAC address of the system (the bond's MAC).
    pub system: EthernetAddress,
    /// Operational key: ports with the same key may aggregate together.
    pub key: u16,
    /// Port priority.
    pub port_priority: u16,
    /// Port number, unique within the system.
    pub port: u16,
    /// The state flags.
    pub state: LacpState,
}

impl LacpInfo {
    fn read(b: &[u8]) -> LacpInfo {
        LacpInfo {
            system_priority: u16::from_be_bytes([b[0], b[1]]),
            system: EthernetAddress([b[2], b[3], b[4], b[5], b[6], b[7]]),
            key: u16::from_be_bytes([b[8], b[9]]),
            port_priority: u16::from_be_bytes([b[10], b[11]]),
            port: u16::from_be_bytes([b[12], b[13]]),
            state: LacpState(b[14]),
        }
    }

    fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&self.system_priority.to_be_bytes());
        b[2..8].copy_from_slice(&self.system.0);
        b[8..10].copy_from_slice(&self.key.to_be_bytes());
        b[10..12].copy_from_slice(&self.port_priority.to_be_bytes());
        b[12..14].copy_from_slice(&self.port.to_be_bytes());
        b[14] = self.state.0;
        b[15..18].fill(0);
    }

    /// Whether two informations name the same system, key, port and priorities (the state aside):
    /// the comparison of the receive machine's `update_Selected` (§6.4.9).
    pub fn same_port(&self, other: &LacpInfo) -> bool {
        (
            self.system_priority,
            self.system,
            self.key,
            self.port_priority,
            self.port,
        ) == (
            other.system_priority,
            other.system,
            other.key,
            other.port_priority,
            other.port,
        )
    }
}

/// A LACPDU's contents (the bytes after the Ethernet header).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lacpdu {
    /// LACP version (1; later versions are read as 1).
    pub version: u8,
    /// The sender's own information.
    pub actor: LacpInfo,
    /// What the sender believes about the receiver.
    pub partner: LacpInfo,
    /// CollectorMaxDelay, tens of microseconds (§6.4.2.3 item ab).
    pub collector_max_delay: u16,
}

fn tlv(b: &[u8], at: usize, want: (u8, u8), what: [&'static str; 2]) -> Result<(), LacpError> {
    if b[at] != want.0 {
        return Err(LacpError::BadField {
            field: what[0],
            value: b[at],
            accepted: what[1],
        });
    }
    if b[at + 1] != want.1 {
        return Err(LacpError::BadField {
            field: "TLV length",
            value: b[at + 1],
            accepted: "20 for actor/partner, 16 for collector, 0 for the terminator",
        });
    }
    Ok(())
}

impl Lacpdu {
    /// Reads a LACPDU from the bytes after the Ethernet header (subtype first). Extra bytes after
    /// the 110 (Ethernet padding) are ignored.
    pub fn parse(b: &[u8]) -> Result<Lacpdu, LacpError> {
        if b.len() < LACPDU_LEN {
            return Err(LacpError::Truncated { len: b.len() });
        }
        if b[0] != LACP_SUBTYPE {
            return Err(LacpError::BadField {
                field: "subtype",
                value: b[0],
                accepted: "1 (LACP)",
            });
        }
        if b[1] == 0 {
            return Err(LacpError::BadField {
                field: "version",
                value: 0,
                accepted: "1 or higher",
            });
        }
        tlv(b, 2, ACTOR_TLV, ["actor TLV type", "0x01"])?;
        tlv(b, 22, PARTNER_TLV, ["partner TLV type", "0x02"])?;
        tlv(b, 42, COLLECTOR_TLV, ["collector TLV type", "0x03"])?;
        tlv(b, 58, TERMINATOR_TLV, ["terminator TLV type", "0x00"])?;
        Ok(Lacpdu {
            version: b[1],
            actor: LacpInfo::read(&b[4..22]),
            partner: LacpInfo::read(&b[24..42]),
            collector_max_delay: u16::from_be_bytes([b[44], b[45]]),
        })
    }

    /// Writes the LACPDU into `b[..110]` (version 1 whatever `self.version` says). Returns `false`
    /// (writing nothing) if `b` is shorter.
    pub fn emit(&self, b: &mut [u8]) -> bool {
        if b.len() < LACPDU_LEN {
            return false;
        }
        let b = &mut b[..LACPDU_LEN];
        b.fill(0);
        b[0] = LACP_SUBTYPE;
        b[1] = LACP_VERSION;
        b[2..4].copy_from_slice(&[ACTOR_TLV.0, ACTOR_TLV.1]);
        self.actor.write(&mut b[4..22]);
        b[22..24].copy_from_slice(&[PARTNER_TLV.0, PARTNER_TLV.1]);
        self.partner.write(&mut b[24..42]);
        b[42..44].copy_from_slice(&[COLLECTOR_TLV.0, COLLECTOR_TLV.1]);
        b[44..46].copy_from_slice(&self.collector_max_delay.to_be_bytes());
        // 46..58 reserved, 58..60 terminator (0, 0), 60..110 reserved: all zero.
        true
    }

    /// A whole frame: to [`SLOW_PROTOCOLS_MAC`] from `src`, EtherType 0x8809, this LACPDU.
    pub fn build_frame(&self, src: EthernetAddress) -> [u8; LACPDU_FRAME_LEN] {
        let mut f = [0u8; LACPDU_FRAME_LEN];
        f[0..6].copy_from_slice(&SLOW_PROTOCOLS_MAC.0);
        f[6..12].copy_from_slice(&src.0);
        f[12..14].copy_from_slice(&SLOW_PROTOCOLS_ETHERTYPE.0.to_be_bytes());
        self.emit(&mut f[14..]);
        f
    }

    /// Whether an untagged frame is a Slow Protocols frame of subtype LACP (what a bond consumes).
    pub fn is_lacp_frame(frame: &[u8]) -> bool {
        frame.len() > 14
            && frame[12..14] == SLOW_PROTOCOLS_ETHERTYPE.0.to_be_bytes()
            && frame[14] == LACP_SUBTYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Lacpdu {
        Lacpdu {
            version: 1,
            actor: LacpInfo {
                system_priority: 0xffff,
                system: EthernetAddress([0x02, 0xfe, 0, 0, 0x10, 0]),
                key: 9,
                port_priority: 0xff,
                port: 2,
                state: LacpState(LacpState::ACTIVITY | LacpState::TIMEOUT | LacpState::AGGREGATION),
            },
            partner: LacpInfo {
                system_priority: 65535,
                system: EthernetAddress([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff]),
                key: 15,
                port_priority: 255,
                port: 1,
                state: LacpState(0x3d),
            },
            collector_max_delay: 0,
        }
    }

    /// A LACPDU as Linux 6.x sends it (bond0 over eth1, lacp_rate fast, partner not yet known),
    /// byte for byte from a capture's layout in IEEE 802.1AX-2014 Figure 6-7.
    const LINUX: [u8; LACPDU_FRAME_LEN] = {
        let mut f = [0u8; LACPDU_FRAME_LEN];
        let head: [u8; 44] = [
            0x01, 0x80, 0xc2, 0x00, 0x00, 0x02, // dst
            0x52, 0x54, 0x00, 0x12, 0x34, 0x56, // src
            0x88, 0x09, // slow protocols
            0x01, 0x01, // subtype LACP, version 1
            0x01, 0x14, // actor TLV
            0xff, 0xff, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x00, 0x0f, 0x00, 0xff, 0x00, 0x01,
            0x47, 0x00, 0x00,
            0x00, // actor: prio, system, key 15, port prio 255, port 1, state
            0x02, 0x14, // partner TLV
            0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
        ];
        let mut i = 0;
        while i < head.len() {
            f[i] = head[i];
            i += 1;
        }
        // partner system (last 2 bytes), key 0, port priority 255, port 1, state 0x02
        f[49] = 0xff; // port priority
        f[51] = 0x01; // port
        f[52] = 0x02; // state: short timeout
        f[56] = 0x03;
        f[57] = 0x10; // collector TLV
        f
    };

    #[test]
    fn a_linux_lacpdu_parses_field_by_field() {
        assert!(Lacpdu::is_lacp_frame(&LINUX));
        let p = Lacpdu::parse(&LINUX[14..]).unwrap();
        assert_eq!(p.version, 1);
        assert_eq!(p.actor.system_priority, 0xffff);
        assert_eq!(p.actor.system.to_string(), "52:54:00:12:34:56");
        assert_eq!(p.actor.key, 15);
        assert_eq!(p.actor.port_priority, 255);
        assert_eq!(p.actor.port, 1);
        assert_eq!(p.actor.state.0, 0x47);
        assert!(p.actor.state.has(LacpState::ACTIVITY | LacpState::TIMEOUT));
        assert!(p
            .actor
            .state
            .has(LacpState::AGGREGATION | LacpState::DEFAULTED));
        assert!(!p.actor.state.has(LacpState::SYNCHRONIZATION));
        assert_eq!(p.partner.system, EthernetAddress::ZERO);
        assert_eq!(p.partner.port_priority, 255);
        assert_eq!(p.partner.state, LacpState(LacpState::TIMEOUT));
        assert_eq!(
            p.actor.state.names(),
            vec!["activity", "short-timeout", "aggregation", "defaulted"]
        );
    }

    #[test]
    fn build_then_parse_gives_the_same_lacpdu_and_the_exact_layout() {
        let src = EthernetAddress([0x02, 0xfe, 0, 0, 0x10, 0]);
        let f = sample().build_frame(src);
        assert_eq!(f.len(), 124);
        assert_eq!(&f[0..6], &[0x01, 0x80, 0xc2, 0, 0, 2]);
        assert_eq!(&f[6..12], &src.0);
        assert_eq!(&f[12..16], &[0x88, 0x09, 1, 1]);
        assert_eq!(&f[16..18], &[0x01, 0x14]);
        assert_eq!(&f[36..38], &[0x02, 0x14]);
        assert_eq!(&f[56..58], &[0x03, 0x10]);
        assert_eq!(&f[72..74], &[0x00, 0x00]);
        assert!(f[74..].iter().all(|&b| b == 0));
        assert_eq!(Lacpdu::parse(&f[14..]).unwrap(), sample());
    }

    #[test]
    fn malformed_lacpdus_are_named_errors() {
        let f = sample().build_frame(EthernetAddress([2, 0, 0, 0, 0, 1]));
        let p = &f[14..];
        assert_eq!(
            Lacpdu::parse(&p[..109]),
            Err(LacpError::Truncated { len: 109 })
        );
        assert_eq!(Lacpdu::parse(&[]), Err(LacpError::Truncated { len: 0 }));
        let bad = |at: usize, v: u8| {
            let mut b = p.to_vec();
            b[at] = v;
            Lacpdu::parse(&b).unwrap_err()
        };
        assert!(matches!(
            bad(0, 2),
            LacpError::BadField {
                field: "subtype",
                value: 2,
                ..
            }
        ));
        assert!(matches!(
            bad(1, 0),
            LacpError::BadField {
                field: "version",
                ..
            }
        ));
        assert!(matches!(
            bad(2, 9),
            LacpError::BadField {
                field: "actor TLV type",
                ..
            }
        ));
        assert!(matches!(
            bad(23, 19),
            LacpError::BadField {
                field: "TLV length",
                ..
            }
        ));
        assert!(matches!(
            bad(42, 1),
            LacpError::BadField {
                field: "collector TLV type",
                ..
            }
        ));
        assert!(matches!(
            bad(58, 3),
            LacpError::BadField {
                field: "terminator TLV type",
                ..
            }
        ));
        let msg = bad(0, 2).to_string();
        assert!(msg.contains("subtype") && msg.contains("0x02") && msg.contains("1 (LACP)"));
        // A later version is read (§6.4.2.3: fields it knows), padding after 110 bytes ignored.
        let mut v2 = p.to_vec();
        v2[1] = 2;
        v2.extend_from_slice(&[0xee; 8]);
        assert_eq!(Lacpdu::parse(&v2).unwrap().version, 2);
        assert!(!Lacpdu::is_lacp_frame(&f[..14]));
        let mut marker = f;
        marker[14] = 2; // subtype 2: the Marker protocol, not LACP
        assert!(!Lacpdu::is_lacp_frame(&marker));
        assert!(!sample().emit(&mut [0u8; 109]));
    }

    #[test]
    fn state_bits_set_and_clear() {
        let mut s = LacpState::default();
        s.set(LacpState::COLLECTING | LacpState::DISTRIBUTING, true);
        assert!(s.has(LacpState::COLLECTING));
        s.set(LacpState::COLLECTING, false);
        assert_eq!(s, LacpState(LacpState::DISTRIBUTING));
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        fn info() -> impl Strategy<Value = LacpInfo> {
            (
                any::<u16>(),
                any::<[u8; 6]>(),
                any::<u16>(),
                any::<u16>(),
                any::<u16>(),
                any::<u8>(),
            )
                .prop_map(|(sp, sys, key, pp, port, st)| LacpInfo {
                    system_priority: sp,
                    system: EthernetAddress(sys),
                    key,
                    port_priority: pp,
                    port,
                    state: LacpState(st),
                })
        }

        proptest! {
            /// Any LACPDU written reads back the same (version 1), in 110 bytes.
            #[test]
            fn emit_then_parse_round_trips(a in info(), p in info(), d in any::<u16>()) {
                let pdu = Lacpdu { version: 1, actor: a, partner: p, collector_max_delay: d };
                let mut b = [0xa5u8; LACPDU_LEN];
                prop_assert!(pdu.emit(&mut b));
                prop_assert_eq!(Lacpdu::parse(&b), Ok(pdu));
            }

            /// Arbitrary bytes never panic the parser: a LACPDU or a named error.
            #[test]
            fn arbitrary_bytes_parse_or_fail_by_name(b in proptest::collection::vec(any::<u8>(), 0..160)) {
                match Lacpdu::parse(&b) {
                    Ok(_) => prop_assert!(b.len() >= LACPDU_LEN),
                    Err(e) => prop_assert!(!e.to_string().is_empty()),
                }
                let _ = Lacpdu::is_lacp_frame(&b);
            }
        }
    }
}
