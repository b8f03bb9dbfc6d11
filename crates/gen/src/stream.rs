//! Streams: what the generator sends. A [`StreamSpec`] (headers, VLAN tags, frame size or mix, flow
//! ranges, ports) is compiled into a [`StreamBuilder`] that writes frame `n` of the stream into a
//! buffer at low per-frame cost.
//!
//! The builder keeps one template per distinct frame size, emitted once with the `wire` crate's
//! reprs (Ethernet, 802.1Q/802.1ad tags, IPv4/IPv6, UDP with valid checksums, a zeroed signature).
//! Frame `n` is a copy of its size's template with the flow's fields patched in and the signature
//! written; the IPv4 header checksum and the UDP checksum are then updated incrementally (RFC 1624
//! eqn. 3) from the template's, never recomputed over the payload.
//!
//! Everything about frame `n` (its size, flow, sequence number) is a function of `n` and the seed:
//! runs are reproducible, and a frame a port refused is rebuilt identically later.

use std::net::IpAddr;

use serde::Serialize;
use vecswitch_wire::checksum;
use vecswitch_wire::{
    EtherType, EthernetAddress, IpProtocol, Ipv4Packet, Ipv4Repr, Ipv6Packet, Ipv6Repr, L2Header,
    L2Tag, UdpPacket, UdpRepr,
};

use crate::flow::{self, Field, FieldRange, FlowOrder};
use crate::signature::{self, Layout};
use crate::size::{SizeSequence, SizeSpec, FCS_LEN, MAX_FRAME};
use crate::GenError;

/// One VLAN tag of a stream's frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VlanSpec {
    /// 0x8100 (802.1Q C-tag) or 0x88a8 (802.1ad S-tag).
    pub tpid: u16,
    pub vid: u16,
    pub pcp: u8,
}

impl VlanSpec {
    /// An 802.1Q tag (TPID 0x8100).
    pub fn dot1q(vid: u16) -> VlanSpec {
        VlanSpec {
            tpid: 0x8100,
            vid,
            pcp: 0,
        }
    }
    /// An 802.1ad service tag (TPID 0x88a8), the outer tag of Q-in-Q.
    pub fn dot1ad(vid: u16) -> VlanSpec {
        VlanSpec {
            tpid: 0x88a8,
            vid,
            pcp: 0,
        }
    }
}

/// A stream as configured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSpec {
    /// Name in reports (defaults to `s<id>`).
    pub name: String,
    /// Index of the port that sends the stream.
    pub tx_port: usize,
    /// Index of the port where the stream is expected back.
    pub rx_port: usize,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// Outer tag first; at most two (IEEE 802.1Q-2018 §6.9 C-tag, 802.1ad S-tag outer).
    pub vlans: Vec<VlanSpec>,
    /// Source and destination addresses: both IPv4 or both IPv6.
    pub src_ip: IpAddr,
    pub dst_ip: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    pub size: SizeSpec,
    /// Distinct flows (frame `n` is flow `n mod flows`).
    pub flows: u32,
    /// Fields that vary per flow.
    pub ranges: Vec<FieldRange>,
    /// Flows repeat (`Cycle`, frame `n` is flow `n mod flows`) or never (`Unique`: frame `n` is
    /// tuple `base + n` of the ranges' space, `flows` unused; see [`crate::flow`]).
    pub order: FlowOrder,
    /// Seed of the size-mix shuffle.
    pub seed: u64,
}

impl StreamSpec {
    /// An untagged IPv4/UDP stream from port `tx` to port `rx` with fixed 64-byte frames, one flow,
    /// locally administered MACs 02:00:00:00:00:0{tx+1} → 02:00:00:00:00:0{rx+1}, 198.18.0.0/15
    /// addresses (RFC 2544 Appendix C.2.2 benchmarking range) and UDP 1024 → 1024.
    pub fn ipv4(tx: usize, rx: usize) -> StreamSpec {
        StreamSpec {
            name: String::new(),
            tx_port: tx,
            rx_port: rx,
            src_mac: [0x02, 0, 0, 0, 0, tx as u8 + 1],
            dst_mac: [0x02, 0, 0, 0, 0, rx as u8 + 1],
            vlans: Vec::new(),
            src_ip: IpAddr::V4([198, 18, tx as u8, 1].into()),
            dst_ip: IpAddr::V4([198, 19, rx as u8, 1].into()),
            src_port: 1024,
            dst_port: 1024,
            size: SizeSpec::Fixed(64),
            flows: 1,
            ranges: Vec::new(),
            order: FlowOrder::Cycle,
            seed: 0,
        }
    }

    /// Like [`StreamSpec::ipv4`] with IPv6 addresses from 2001:2::/48, the IPv6 benchmarking range
    /// (RFC 5180 §5): 2001:2::{tx}:1 → 2001:2:0:1::{rx}:1. 64-byte frames are raised to 76 (see
    /// [`signature::min_frame_size`]).
    pub fn ipv6(tx: usize, rx: usize) -> StreamSpec {
        let mut s = StreamSpec::ipv4(tx, rx);
        s.src_ip = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, tx as u16, 1));
        s.dst_ip = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 2, 0, 1, 0, 0, rx as u16, 1));
        s
    }

    /// The same stream sent the other way (ports, MACs, addresses and UDP ports swapped), for
    /// bidirectional trials.
    pub fn reversed(&self) -> StreamSpec {
        let mut r = self.clone();
        std::mem::swap(&mut r.tx_port, &mut r.rx_port);
        std::mem::swap(&mut r.src_mac, &mut r.dst_mac);
        std::mem::swap(&mut r.src_ip, &mut r.dst_ip);
        std::mem::swap(&mut r.src_port, &mut r.dst_port);
        for range in &mut r.ranges {
            range.field = match range.field {
                Field::SrcMac => Field::DstMac,
                Field::DstMac => Field::SrcMac,
                Field::SrcIp => Field::DstIp,
                Field::DstIp => Field::SrcIp,
                Field::SrcPort => Field::DstPort,
                Field::DstPort => Field::SrcPort,
            };
        }
        if !r.name.is_empty() {
            r.name.push_str("-rev");
        }
        r
    }

    fn is_ipv6(&self) -> bool {
        self.src_ip.is_ipv6()
    }

    /// Smallest frame size (with FCS) this stream's headers allow with a signature.
    pub fn min_frame_size(&self) -> u16 {
        signature::min_frame_size(self.vlans.len(), self.is_ipv6())
    }
}

/// A frame size the stream could not build as asked and raised to its minimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeRaised {
    pub requested: u16,
    pub built: u16,
}

#[derive(Debug, Clone)]
struct Template {
    bytes: Vec<u8>,
    layout: Layout,
    sig_off: usize,
    udp_csum_off: usize,
    /// IPv4 header checksum offset (None for IPv6).
    ip_csum_off: Option<usize>,
    udp_csum: u16,
    ip_csum: u16,
}

/// Where each variable field lives (same in every template: headers precede the payload).
#[derive(Debug, Clone, Copy)]
struct Offsets {
    src_mac: usize,
    dst_mac: usize,
    src_ip: usize,
    dst_ip: usize,
    src_port: usize,
    dst_port: usize,
}

/// A compiled stream: writes frame `n` with its signature.
#[derive(Debug, Clone)]
pub struct StreamBuilder {
    id: u16,
    spec: StreamSpec,
    sizes: SizeSequence,
    templates: Vec<Template>,
    off: Offsets,
    ipv6: bool,
    raised: Vec<SizeRaised>,
    /// Tuple number of frame 0 in [`FlowOrder::Unique`] ([`StreamBuilder::set_unique_base`]).
    unique_base: u64,
    /// Tuples of the unique space ([`flow::unique_space`]).
    unique_space: u64,
}

fn cfg_err(field: &str, value: impl ToString, accepted: impl Into<String>) -> GenError {
    GenError::Config {
        field: field.into(),
        value: value.to_string(),
        accepted: accepted.into(),
    }
}

impl StreamBuilder {
    /// Validates `spec` and builds its templates. `id` is the stream id the signature carries.
    pub fn new(id: u16, spec: &StreamSpec) -> Result<StreamBuilder, GenError> {
        spec.size.validate()?;
        if spec.vlans.len() > 2 {
            return Err(cfg_err(
                "vlans",
                spec.vlans.len(),
                "at most 2 VLAN tags (outer, inner)",
            ));
        }
        for v in &spec.vlans {
            if v.vid > 4094 || v.pcp > 7 || !(v.tpid == 0x8100 || v.tpid == 0x88a8) {
                return Err(cfg_err(
                    "vlan",
                    format!("tpid {:#06x} vid {} pcp {}", v.tpid, v.vid, v.pcp),
                    "tpid 0x8100 or 0x88a8, vid 0..=4094, pcp 0..=7",
                ));
            }
        }
        let ipv6 = spec.is_ipv6();
        if spec.src_ip.is_ipv6() != spec.dst_ip.is_ipv6() {
            return Err(cfg_err(
                "dst-ip",
                spec.dst_ip,
                "an address of the same family as src-ip",
            ));
        }
        let min = spec.min_frame_size();
        let max_stream = if SizeSequence::new(&spec.size, spec.seed, |s| s.max(min))
            .sizes()
            .iter()
            .all(|&s| Layout::for_room(Self::room(spec, s)) == Some(Layout::Full))
        {
            signature::MAX_STREAM_FULL
        } else {
            signature::MAX_STREAM_COMPACT
        };
        if id > max_stream {
            return Err(cfg_err(
                "stream id",
                id,
                format!(
                    "0..={max_stream} (frames of this stream carry the {} signature)",
                    if max_stream == signature::MAX_STREAM_FULL {
                        "full"
                    } else {
                        "compact"
                    }
                ),
            ));
        }
        flow::validate(&spec.ranges, spec.flows, |f| field_start(spec, f), ipv6)?;

        let sizes = SizeSequence::new(&spec.size, spec.seed, |s| s.max(min));
        let mut raised: Vec<SizeRaised> = spec
            .size
            .sizes()
            .into_iter()
            .filter(|&s| s < min)
            .map(|s| SizeRaised {
                requested: s,
                built: min,
            })
            .collect();
        raised.dedup();

        let l2 = L2Header {
            dst_addr: EthernetAddress(spec.dst_mac),
            src_addr: EthernetAddress(spec.src_mac),
            outer: spec.vlans.first().map(|v| L2Tag {
                tpid: EtherType(v.tpid),
                pcp: v.pcp,
                dei: false,
                vid: v.vid,
            }),
            inner: spec.vlans.get(1).map(|v| L2Tag {
                tpid: EtherType(v.tpid),
                pcp: v.pcp,
                dei: false,
                vid: v.vid,
            }),
            ethertype: if ipv6 {
                EtherType::IPV6
            } else {
                EtherType::IPV4
            },
            l3_offset: 14 + 4 * spec.vlans.len(),
        };
        let l3 = l2.header_len();
        let ip_hlen = if ipv6 { 40 } else { 20 };
        let l4 = l3 + ip_hlen;
        let off = Offsets {
            dst_mac: 0,
            src_mac: 6,
            src_ip: l3 + if ipv6 { 8 } else { 12 },
            dst_ip: l3 + if ipv6 { 24 } else { 16 },
            src_port: l4,
            dst_port: l4 + 2,
        };
        let mut templates = Vec::new();
        for &size in sizes.sizes() {
            let wire_len = size as usize - FCS_LEN;
            let mut bytes = vec![0u8; wire_len];
            l2.emit(&mut bytes)
                .map_err(|e| cfg_err("size", size, format!("room for the L2 header ({e})")))?;
            let udp_len = wire_len - l4;
            let ip_csum_off = match (spec.src_ip, spec.dst_ip) {
                (IpAddr::V4(src), IpAddr::V4(dst)) => {
                    Ipv4Repr::new(src, dst, IpProtocol::UDP, udp_len)
                        .emit(&mut Ipv4Packet::new_unchecked(&mut bytes[l3..]));
                    Some(l3 + 10)
                }
                (IpAddr::V6(src), IpAddr::V6(dst)) => {
                    Ipv6Repr::new(src, dst, IpProtocol::UDP, udp_len)
                        .emit(&mut Ipv6Packet::new_unchecked(&mut bytes[l3..]));
                    None
                }
                _ => {
                    return Err(cfg_err(
                        "dst-ip",
                        spec.dst_ip,
                        "an address of the same family as src-ip",
                    ))
                }
            };
            let udp = UdpRepr {
                src_port: spec.src_port,
                dst_port: spec.dst_port,
                payload_len: udp_len - 8,
            };
            let mut u = UdpPacket::new_unchecked(&mut bytes[l4..]);
            udp.emit(&mut u);
            u.fill_checksum(&spec.src_ip, &spec.dst_ip);
            let udp_csum = u.checksum();
            let ip_csum = if ipv6 {
                0
            } else {
                Ipv4Packet::new_unchecked(&bytes[l3..]).checksum()
            };
            let layout = Layout::for_room(udp_len - 8)
                .ok_or_else(|| cfg_err("size", size, format!("{min}..={MAX_FRAME}")))?;
            templates.push(Template {
                bytes,
                layout,
                sig_off: l4 + 8,
                udp_csum_off: l4 + 6,
                ip_csum_off,
                udp_csum,
                ip_csum,
            });
        }
        let mut spec = spec.clone();
        if spec.name.is_empty() {
            spec.name = format!("s{id}");
        }
        let unique_space = flow::unique_space(&spec.ranges);
        Ok(StreamBuilder {
            id,
            spec,
            sizes,
            templates,
            off,
            ipv6,
            raised,
            unique_base: 0,
            unique_space,
        })
    }

    /// UDP payload room of a frame of `size` for this stream's headers.
    fn room(spec: &StreamSpec, size: u16) -> usize {
        let hdr = 14 + 4 * spec.vlans.len() + if spec.is_ipv6() { 40 } else { 20 } + 8;
        (size as usize - FCS_LEN).saturating_sub(hdr)
    }

    pub fn id(&self) -> u16 {
        self.id
    }

    /// Whether the stream's flows never repeat ([`FlowOrder::Unique`]).
    pub fn is_unique(&self) -> bool {
        self.spec.order == FlowOrder::Unique
    }

    /// In [`FlowOrder::Unique`], frame `n` gets tuple `base + n` (the generator advances `base` by
    /// every phase's frames).
    pub fn set_unique_base(&mut self, base: u64) {
        self.unique_base = base;
    }

    /// Fails when frames `0..frames` from the current base would repeat a tuple (unique order
    /// only; see [`flow::check_unique`]).
    pub fn check_unique(&self, frames: u64) -> Result<(), GenError> {
        if self.is_unique() {
            flow::check_unique(&self.spec.ranges, self.unique_base, frames)
        } else {
            Ok(())
        }
    }

    pub fn spec(&self) -> &StreamSpec {
        &self.spec
    }

    /// Sizes the stream asked for but could not carry a signature in, and what was built instead.
    pub fn raised(&self) -> &[SizeRaised] {
        &self.raised
    }

    /// Whether some of the stream's frame sizes carry the compact signature layout.
    pub fn sends_compact(&self) -> bool {
        self.templates.iter().any(|t| t.layout == Layout::Compact)
    }

    /// The stream's resolved size sequence.
    pub fn sizes(&self) -> &SizeSequence {
        &self.sizes
    }

    /// Bytes on the link (size − FCS) of frame `n`.
    #[inline]
    pub fn wire_len(&self, n: u64) -> usize {
        self.templates[self.sizes.index(n)].bytes.len()
    }

    /// Frame size with FCS of frame `n`.
    #[inline]
    pub fn frame_size(&self, n: u64) -> u16 {
        self.sizes.size(n)
    }

    /// Rewrites the transmit timestamp of frame `n`, already built into `out` by
    /// [`StreamBuilder::build`], to `tx_ns`, updating the UDP checksum incrementally (RFC 1624).
    /// The engine builds a batch, then stamps it right before the transmit call.
    #[inline]
    pub fn restamp(&self, n: u64, tx_ns: u64, out: &mut [u8]) {
        let t = &self.templates[self.sizes.index(n)];
        // The timestamp field: bytes 10..18 (full) or 6..10 (compact) of the signature, at an even
        // offset in the frame (the signature starts right after the UDP header).
        let (o, w) = match t.layout {
            signature::Layout::Full => (t.sig_off + 10, 8),
            signature::Layout::Compact => (t.sig_off + 6, 4),
        };
        let Some(field) = out.get(o..o + w) else {
            return;
        };
        let mut old = [0u8; 8];
        old[..w].copy_from_slice(field);
        let mut new = [0u8; 8];
        match t.layout {
            signature::Layout::Full => new.copy_from_slice(&tx_ns.to_be_bytes()),
            signature::Layout::Compact => new[..4]
                .copy_from_slice(&((tx_ns / signature::COMPACT_TICK_NS) as u32).to_be_bytes()),
        }
        let c = t.udp_csum_off;
        let udp = u16::from_be_bytes([out[c], out[c + 1]]);
        let mut udp = checksum::update_bytes(udp, &old[..w], &new[..w]);
        if udp == 0 {
            udp = 0xffff; // RFC 768: a computed zero is sent as all ones.
        }
        out[o..o + w].copy_from_slice(&new[..w]);
        out[c..c + 2].copy_from_slice(&udp.to_be_bytes());
    }

    /// Writes frame `n` (sequence number `n`) into `out`, which must be exactly
    /// [`StreamBuilder::wire_len`]`(n)` bytes.
    #[inline]
    pub fn build(&self, n: u64, tx_ns: u64, warmup: bool, out: &mut [u8]) {
        let t = &self.templates[self.sizes.index(n)];
        out.copy_from_slice(&t.bytes);
        let mut udp = t.udp_csum;
        let mut ip = t.ip_csum;
        if !self.spec.ranges.is_empty() {
            let unique = self.spec.order == FlowOrder::Unique;
            let flow = n % self.spec.flows as u64;
            // Unique: the tuple number's mixed-radix digits, the first range fastest.
            let mut rest = if unique {
                self.unique_base.wrapping_add(n) % self.unique_space.max(1)
            } else {
                0
            };
            for r in &self.spec.ranges {
                let k = if unique {
                    let c = u64::from(r.count.max(1));
                    let digit = rest % c;
                    rest /= c;
                    r.offset(digit)
                } else {
                    r.offset(flow)
                };
                if k == 0 {
                    continue;
                }
                match r.field {
                    Field::SrcMac | Field::DstMac => {
                        let o = if r.field == Field::SrcMac {
                            self.off.src_mac
                        } else {
                            self.off.dst_mac
                        } + 2;
                        let old = u32::from_be_bytes(out[o..o + 4].try_into().unwrap_or_default());
                        out[o..o + 4].copy_from_slice(&old.wrapping_add(k as u32).to_be_bytes());
                    }
                    Field::SrcIp | Field::DstIp => {
                        let o = if r.field == Field::SrcIp {
                            self.off.src_ip
                        } else {
                            self.off.dst_ip
                        };
                        if self.ipv6 {
                            // Low 64 bits of the address.
                            let o = o + 8;
                            let old: [u8; 8] = out[o..o + 8].try_into().unwrap_or_default();
                            let new = u64::from_be_bytes(old).wrapping_add(k).to_be_bytes();
                            out[o..o + 8].copy_from_slice(&new);
                            udp = checksum::update_bytes(udp, &old, &new);
                        } else {
                            let old =
                                u32::from_be_bytes(out[o..o + 4].try_into().unwrap_or_default());
                            let new = old.wrapping_add(k as u32);
                            out[o..o + 4].copy_from_slice(&new.to_be_bytes());
                            udp = checksum::update32(udp, old, new);
                            ip = checksum::update32(ip, old, new);
                        }
                    }
                    Field::SrcPort | Field::DstPort => {
                        let o = if r.field == Field::SrcPort {
                            self.off.src_port
                        } else {
                            self.off.dst_port
                        };
                        let old = u16::from_be_bytes([out[o], out[o + 1]]);
                        let new = old.wrapping_add(k as u16);
                        out[o..o + 2].copy_from_slice(&new.to_be_bytes());
                        udp = checksum::update16(udp, old, new);
                    }
                }
            }
        }
        let s = &mut out[t.sig_off..t.sig_off + t.layout.len()];
        signature::write(s, t.layout, self.id, warmup, n, tx_ns);
        // The template's signature bytes were zero: adding the new words is the RFC 1624 update.
        udp = !checksum::fold(!udp as u64 + checksum::sum(s) as u64);
        if udp == 0 {
            udp = 0xffff; // RFC 768: a computed zero is sent as all ones.
        }
        out[t.udp_csum_off..t.udp_csum_off + 2].copy_from_slice(&udp.to_be_bytes());
        if let Some(o) = t.ip_csum_off {
            out[o..o + 2].copy_from_slice(&ip.to_be_bytes());
        }
    }
}

/// The template value of a field as a number (the low 32 bits of a MAC, the low 64 of an IPv6
/// address), for range validation.
fn field_start(spec: &StreamSpec, f: Field) -> u64 {
    let mac = |m: [u8; 6]| u32::from_be_bytes([m[2], m[3], m[4], m[5]]) as u64;
    let ip = |a: IpAddr| match a {
        IpAddr::V4(a) => u32::from(a) as u64,
        IpAddr::V6(a) => u128::from(a) as u64,
    };
    match f {
        Field::SrcMac => mac(spec.src_mac),
        Field::DstMac => mac(spec.dst_mac),
        Field::SrcIp => ip(spec.src_ip),
        Field::DstIp => ip(spec.dst_ip),
        Field::SrcPort => spec.src_port as u64,
        Field::DstPort => spec.dst_port as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::FieldMode;
    use crate::rx::find_signature;
    use vecswitch_wire::{Ipv4Packet, L2Header, UdpPacket};

    fn build(b: &StreamBuilder, n: u64, ts: u64) -> Vec<u8> {
        let mut v = vec![0u8; b.wire_len(n)];
        b.build(n, ts, false, &mut v);
        v
    }

    /// Checks the IPv4 header checksum and the UDP checksum with the wire crate's full computation.
    fn assert_checksums_v4(f: &[u8]) {
        let l2 = L2Header::parse(f).unwrap();
        let ip = Ipv4Packet::new_checked(&f[l2.l3_offset..]).unwrap();
        assert!(ip.verify_checksum(), "IPv4 header checksum");
        let (src, dst) = (IpAddr::V4(ip.src_addr()), IpAddr::V4(ip.dst_addr()));
        let udp = UdpPacket::new_checked(&f[l2.l3_offset + 20..]).unwrap();
        assert!(udp.verify_checksum(&src, &dst), "UDP checksum");
        assert_eq!(
            udp.checksum(),
            udp.compute_checksum(&src, &dst),
            "incremental == full recomputation"
        );
    }

    #[test]
    fn ipv4_64_byte_frame_is_byte_exact() {
        let b = StreamBuilder::new(3, &StreamSpec::ipv4(0, 1)).unwrap();
        let f = build(&b, 0x0102_0304, 0x1122_3344_5566_7788);
        let mut want: Vec<u8> = vec![
            0x02, 0, 0, 0, 0, 0x02, // dst
            0x02, 0, 0, 0, 0, 0x01, // src
            0x08, 0x00, // IPv4
            0x45, 0x00, 0x00, 46, // version/IHL, DSCP, total length 60 - 14
            0x00, 0x00, 0x40, 0x00, // ident 0, DF
            64, 17, 0x00, 0x00, // TTL, UDP, checksum (patched below)
            198, 18, 0, 1, // src
            198, 19, 1, 1, // dst
            0x04, 0x00, 0x04, 0x00, // ports 1024 → 1024
            0x00, 26, 0x00, 0x00, // UDP length 8 + 18, checksum (patched below)
            0x76, 0x53, 0x47, 0x31, 0x00, 0x03, 0x01, 0x02, 0x03,
            0x04, // magic, stream 3, seq
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // tx time
        ];
        assert_eq!(f.len(), 60);
        want[24..26].copy_from_slice(&f[24..26]);
        want[40..42].copy_from_slice(&f[40..42]);
        assert_eq!(f, want);
        assert_checksums_v4(&f);
        // The IPv4 header checksum by hand (RFC 1071) over the fixed fields.
        assert_eq!(
            u16::from_be_bytes([f[24], f[25]]),
            checksum::checksum(&{
                let mut h = want[14..34].to_vec();
                h[10] = 0;
                h[11] = 0;
                h
            })
        );
        let sig = find_signature(&f).unwrap();
        assert_eq!(
            (sig.stream, sig.seq, sig.tx_ns, sig.layout),
            (3, 0x0102_0304, 0x1122_3344_5566_7788, Layout::Full)
        );
    }

    #[test]
    fn qinq_and_single_tag_frames() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.vlans = vec![VlanSpec::dot1ad(100), VlanSpec::dot1q(200)];
        let b = StreamBuilder::new(1, &spec).unwrap();
        let f = build(&b, 7, 99 * signature::COMPACT_TICK_NS);
        assert_eq!(f.len(), 60);
        assert_eq!(
            &f[12..22],
            &[0x88, 0xa8, 0x00, 100, 0x81, 0x00, 0x00, 200, 0x08, 0x00]
        );
        assert_checksums_v4(&f);
        // 64 B with two tags leaves 10 bytes of UDP payload: the compact signature.
        assert!(b.sends_compact());
        let sig = find_signature(&f).unwrap();
        assert_eq!(
            (sig.stream, sig.seq, sig.tx_ns, sig.layout),
            (1, 7, 99, Layout::Compact)
        );

        spec.vlans = vec![VlanSpec::dot1q(4094)];
        spec.size = SizeSpec::Fixed(128);
        let b = StreamBuilder::new(2, &spec).unwrap();
        let f = build(&b, 1, 2);
        assert_eq!(f.len(), 124);
        assert_eq!(&f[12..18], &[0x81, 0x00, 0x0f, 0xfe, 0x08, 0x00]);
        assert!(!b.sends_compact());
        assert_checksums_v4(&f);
    }

    #[test]
    fn restamp_rewrites_the_timestamp_and_keeps_checksums_valid() {
        for vlans in [vec![], vec![VlanSpec::dot1ad(100), VlanSpec::dot1q(200)]] {
            let mut spec = StreamSpec::ipv4(0, 1);
            spec.vlans = vlans;
            let b = StreamBuilder::new(1, &spec).unwrap();
            for (seq, new) in [
                (0u64, 0u64),
                (5, 0x1234_5678_9abc_def0),
                (9, 16 * 0xffff_fff0),
            ] {
                let mut f = build(&b, seq, 77 * signature::COMPACT_TICK_NS);
                b.restamp(seq, new, &mut f);
                assert_checksums_v4(&f);
                let sig = find_signature(&f).unwrap();
                let want = match sig.layout {
                    Layout::Full => new,
                    Layout::Compact => (new / signature::COMPACT_TICK_NS) as u32 as u64,
                };
                assert_eq!((sig.seq as u64, sig.tx_ns), (seq, want));
            }
        }
    }

    #[test]
    fn flow_ranges_patch_fields_and_keep_checksums_valid() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.size = SizeSpec::imix();
        spec.flows = 1000;
        spec.ranges = vec![
            FieldRange {
                field: Field::SrcIp,
                count: 1000,
                mode: FieldMode::Increment,
            },
            FieldRange {
                field: Field::DstIp,
                count: 250,
                mode: FieldMode::Random { seed: 9 },
            },
            FieldRange {
                field: Field::SrcPort,
                count: 1000,
                mode: FieldMode::Random { seed: 1 },
            },
            FieldRange {
                field: Field::DstPort,
                count: 7,
                mode: FieldMode::Increment,
            },
            FieldRange {
                field: Field::SrcMac,
                count: 1000,
                mode: FieldMode::Increment,
            },
            FieldRange {
                field: Field::DstMac,
                count: 3,
                mode: FieldMode::Increment,
            },
        ];
        let b = StreamBuilder::new(0, &spec).unwrap();
        let mut src_ips = std::collections::HashSet::new();
        for n in 0..3000u64 {
            let f = build(&b, n, n * 1000);
            assert_checksums_v4(&f);
            let src = u32::from_be_bytes(f[26..30].try_into().unwrap());
            assert_eq!(src, u32::from_be_bytes([198, 18, 0, 1]) + (n % 1000) as u32);
            assert_eq!(f[5], 2 + (n % 1000 % 3) as u8, "dst MAC low byte");
            assert_eq!(
                u16::from_be_bytes([f[36], f[37]]),
                1024 + (n % 1000 % 7) as u16
            );
            src_ips.insert(src);
            assert_eq!(find_signature(&f).unwrap().seq as u64, n);
        }
        assert_eq!(src_ips.len(), 1000);
    }

    /// Unique order: every frame a new (source port, destination port) pair with valid checksums,
    /// also across a base change (the next phase), rebuilt identically.
    #[test]
    fn unique_order_never_repeats_a_tuple() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.order = FlowOrder::Unique;
        spec.ranges = vec![
            FieldRange {
                field: Field::SrcPort,
                count: 500,
                mode: FieldMode::Increment,
            },
            FieldRange {
                field: Field::DstPort,
                count: 11,
                mode: FieldMode::Random { seed: 3 },
            },
        ];
        let mut b = StreamBuilder::new(0, &spec).unwrap();
        let tuple = |f: &[u8]| {
            (
                u16::from_be_bytes([f[34], f[35]]),
                u16::from_be_bytes([f[36], f[37]]),
            )
        };
        let mut seen = std::collections::HashSet::new();
        for n in 0..3000u64 {
            let f = build(&b, n, n);
            assert_checksums_v4(&f);
            assert!(seen.insert(tuple(&f)), "frame {n} repeats {:?}", tuple(&f));
        }
        assert_eq!(tuple(&build(&b, 1234, 0)), tuple(&build(&b, 1234, 99)));
        b.check_unique(5500).unwrap();
        b.set_unique_base(3000);
        for n in 0..2500u64 {
            let f = build(&b, n, n);
            assert!(seen.insert(tuple(&f)), "phase 2 frame {n} repeats");
        }
        assert_eq!(seen.len(), 5500);
        assert!(b.check_unique(2500).is_ok() && b.check_unique(2501).is_err());
        // Cycle order with the same ranges repeats after `flows` frames.
        spec.order = FlowOrder::Cycle;
        spec.flows = 100;
        let b = StreamBuilder::new(0, &spec).unwrap();
        assert_eq!(tuple(&build(&b, 5, 0)), tuple(&build(&b, 105, 0)));
        assert!(b.check_unique(u64::MAX).is_ok());
    }

    #[test]
    fn seeded_streams_reproduce_the_same_frames() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.size = SizeSpec::imix_spirent_tcpv4();
        spec.seed = 77;
        spec.flows = 5000;
        spec.ranges = vec![FieldRange {
            field: Field::DstIp,
            count: 5000,
            mode: FieldMode::Random { seed: 77 },
        }];
        let a = StreamBuilder::new(0, &spec).unwrap();
        let b = StreamBuilder::new(0, &spec).unwrap();
        for n in 0..2000 {
            assert_eq!(build(&a, n, n), build(&b, n, n));
        }
        spec.seed = 78;
        let c = StreamBuilder::new(0, &spec).unwrap();
        assert!((0..2000).any(|n| build(&a, n, n).len() != build(&c, n, n).len()));
    }

    fn assert_checksum_v6(f: &[u8]) {
        let l2 = L2Header::parse(f).unwrap();
        let ip = vecswitch_wire::Ipv6Packet::new_checked(&f[l2.l3_offset..]).unwrap();
        let (src, dst) = (IpAddr::V6(ip.src_addr()), IpAddr::V6(ip.dst_addr()));
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum(&src, &dst), "UDP checksum");
        assert_eq!(
            udp.checksum(),
            udp.compute_checksum(&src, &dst),
            "incremental == full recomputation"
        );
    }

    #[test]
    fn ipv6_small_frames_are_raised_to_carry_the_signature() {
        let mut spec = StreamSpec::ipv6(0, 1);
        spec.vlans = vec![VlanSpec::dot1ad(1), VlanSpec::dot1q(2)];
        spec.size = SizeSpec::imix();
        let b = StreamBuilder::new(0, &spec).unwrap();
        assert_eq!(
            b.raised(),
            &[SizeRaised {
                requested: 64,
                built: 84
            }]
        );
        assert_eq!(b.sizes().sizes(), &[84, 570, 1518]);
        let f = (0..12)
            .map(|n| build(&b, n, n))
            .find(|f| f.len() == 80)
            .unwrap();
        assert_eq!(
            &f[12..22],
            &[0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2, 0x86, 0xdd]
        );
        assert_checksum_v6(&f);
        assert_eq!(find_signature(&f).unwrap().layout, Layout::Compact);
        // Untagged IPv6 at 64 B becomes 76 B; 84 B is the first size with the full signature.
        let mut spec = StreamSpec::ipv6(0, 1);
        assert_eq!(StreamBuilder::new(0, &spec).unwrap().sizes().sizes(), &[76]);
        spec.size = SizeSpec::Fixed(84);
        assert!(!StreamBuilder::new(0, &spec).unwrap().sends_compact());
    }

    #[test]
    fn ipv6_ranges_keep_udp_checksum_valid() {
        let mut spec = StreamSpec::ipv6(0, 1);
        spec.size = SizeSpec::Fixed(128);
        spec.flows = 4096;
        spec.ranges = vec![
            FieldRange {
                field: Field::SrcIp,
                count: 4096,
                mode: FieldMode::Random { seed: 3 },
            },
            FieldRange {
                field: Field::DstIp,
                count: 64,
                mode: FieldMode::Increment,
            },
            FieldRange {
                field: Field::DstPort,
                count: 100,
                mode: FieldMode::Increment,
            },
        ];
        let b = StreamBuilder::new(9, &spec).unwrap();
        let mut srcs = std::collections::HashSet::new();
        for n in 0..5000 {
            let f = build(&b, n, 12345 + n);
            assert_checksum_v6(&f);
            srcs.insert(f[22..38].to_vec());
            let sig = find_signature(&f).unwrap();
            assert_eq!((sig.stream, sig.seq as u64, sig.tx_ns), (9, n, 12345 + n));
        }
        assert_eq!(srcs.len(), 4096);
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        fn field() -> impl Strategy<Value = Field> {
            prop_oneof![
                Just(Field::SrcMac),
                Just(Field::DstMac),
                Just(Field::SrcIp),
                Just(Field::DstIp),
                Just(Field::SrcPort),
                Just(Field::DstPort),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            /// Any header stack, size, flow ranges and frame number: the frame has the built size,
            /// valid checksums (equal to a full recomputation) and a signature that reads back.
            #[test]
            fn any_stream_builds_valid_frames(
                tags in 0usize..=2,
                qinq in any::<bool>(),
                v6 in any::<bool>(),
                size in 64u16..=9000,
                ranges in proptest::collection::vec((field(), 1u32..5000, any::<bool>(), any::<u64>()), 0..4),
                n in any::<u32>(),
                ts in any::<u64>(),
                id in 0u16..=127,
            ) {
                let mut spec = if v6 { StreamSpec::ipv6(0, 1) } else { StreamSpec::ipv4(0, 1) };
                spec.vlans = (0..tags).map(|i| if i == 0 && qinq { VlanSpec::dot1ad(10) } else { VlanSpec::dot1q(20 + i as u16) }).collect();
                spec.size = SizeSpec::Fixed(size);
                spec.flows = 5000;
                spec.ranges = ranges
                    .iter()
                    .map(|&(field, count, random, seed)| FieldRange {
                        field,
                        count,
                        mode: if random { FieldMode::Random { seed } } else { FieldMode::Increment },
                    })
                    .collect();
                let b = StreamBuilder::new(id, &spec).unwrap();
                let n = n as u64;
                let f = build(&b, n, ts);
                prop_assert_eq!(f.len() + 4, size.max(spec.min_frame_size()) as usize);
                if v6 { assert_checksum_v6(&f) } else { assert_checksums_v4(&f) }
                let sig = find_signature(&f).unwrap();
                prop_assert_eq!(sig.stream, id);
                prop_assert_eq!(sig.seq as u64, n & if sig.layout == Layout::Full { 0xffff_ffff } else { 0xff_ffff });
                let want_ts = if sig.layout == Layout::Full { ts } else { (ts / signature::COMPACT_TICK_NS) & 0xffff_ffff };
                prop_assert_eq!(sig.tx_ns, want_ts);
            }
        }
    }

    #[test]
    fn jumbo_frames_build() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.size = SizeSpec::Fixed(9000);
        let b = StreamBuilder::new(0, &spec).unwrap();
        let f = build(&b, 1, 1);
        assert_eq!(f.len(), 8996);
        assert_checksums_v4(&f);
    }

    #[test]
    fn bad_specs_are_config_errors() {
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.vlans = vec![VlanSpec::dot1q(1); 3];
        assert!(StreamBuilder::new(0, &spec)
            .unwrap_err()
            .to_string()
            .contains("vlans"));
        spec.vlans = vec![VlanSpec::dot1q(4095)];
        assert!(StreamBuilder::new(0, &spec)
            .unwrap_err()
            .to_string()
            .contains("vid"));
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.dst_ip = "2001:db8::1".parse().unwrap();
        assert!(StreamBuilder::new(0, &spec)
            .unwrap_err()
            .to_string()
            .contains("dst-ip"));
        // Compact-signature streams carry only 7-bit stream ids.
        let mut spec = StreamSpec::ipv4(0, 1);
        spec.vlans = vec![VlanSpec::dot1q(5)];
        assert!(StreamBuilder::new(127, &spec).is_ok());
        assert!(StreamBuilder::new(128, &spec)
            .unwrap_err()
            .to_string()
            .contains("stream id"));
        spec.flows = 2_000_000;
        assert!(StreamBuilder::new(0, &spec)
            .unwrap_err()
            .to_string()
            .contains("flows"));
    }
}
