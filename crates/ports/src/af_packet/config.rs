//! [`AfPacketConfig`] (ring geometry, receive mode, socket options) and its validation; [`RxMode`];
//! [`AfPacketError`].

use std::io;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::tx::TxLayout;

/// Page size the ring geometry must respect.
const PAGE_SIZE: u32 = 4096;
/// Largest ring the config accepts (per direction), to catch typos before they pin gigabytes.
const MAX_RING_BYTES: u64 = 1 << 30;

/// Default bytes per block: small enough that block mode retires many blocks, large enough for a
/// 9000-byte frame.
pub const DEFAULT_BLOCK_SIZE: u32 = 1 << 16;
/// Default blocks per ring: 8 MiB per ring. In frame mode 5,248 RX slots at MTU 1500 (26 ms at
/// 200 kfps); in block mode at least 128 block timeouts (128 ms at 1 ms) at any rate.
pub const DEFAULT_BLOCK_COUNT: u32 = 128;

/// How the RX ring hands received frames to user space (see the module doc, "Receive modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "String")]
pub enum RxMode {
    /// TPACKET_V3 blocks: the kernel hands over a block when it is full or after
    /// `block_timeout_ms`. Batches for throughput; a frame may wait up to the timeout.
    Block,
    /// TPACKET_V2 frame slots: each frame is ours as soon as the kernel has written it; both rings
    /// of the socket are then TPACKET_V2. The default: no timer latency, and the ring's depth in
    /// frames does not shrink at low rates (see the module doc, "Ring depth").
    #[default]
    Frame,
}

/// A string that is not an [`RxMode`]; names the field, the value and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("rx_mode = {0:?} is not accepted; expected \"block\" or \"frame\"")]
pub struct RxModeError(pub String);

impl std::str::FromStr for RxMode {
    type Err = RxModeError;
    fn from_str(s: &str) -> Result<RxMode, RxModeError> {
        match s {
            "block" => Ok(RxMode::Block),
            "frame" => Ok(RxMode::Frame),
            _ => Err(RxModeError(s.to_string())),
        }
    }
}

impl TryFrom<String> for RxMode {
    type Error = RxModeError;
    fn try_from(s: String) -> Result<RxMode, RxModeError> {
        s.parse()
    }
}

/// Configuration of an AF_PACKET port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AfPacketConfig {
    /// The port's name in the switch (`show ports`).
    pub name: String,
    /// Kernel interface to open (`eth0`, `veth1`), at most 15 bytes.
    pub interface: String,
    /// Bytes per ring block: a power of two, at least 4096 (one page). The largest frame received
    /// whole is about `block_size - 128`.
    pub block_size: u32,
    /// Blocks per ring (RX and TX each have this many), at least 1. In block mode the RX ring holds
    /// at least `block_count` retire timeouts of traffic at any rate (module doc, "Ring depth").
    pub block_count: u32,
    /// Bytes per TX slot (and, in frame mode, per RX slot): a multiple of 16, from 128 to
    /// `block_size`; the largest frame sent is `frame_size - 48` (frame mode: `- 32`), the largest
    /// received in frame mode `frame_size - 66` (RX slots are sized for the MTU, at most
    /// `frame_size`). Use 16384 for 9000-byte jumbo frames.
    pub frame_size: u32,
    /// How long (ms) the kernel keeps a partly filled RX block before handing it over, 1..=1000
    /// (block mode only).
    pub block_timeout_ms: u32,
    /// Send without the interface's qdisc (`PACKET_QDISC_BYPASS`), like a NIC driver: no qdisc
    /// that could drop or delay a frame after the port handed it over. Default on.
    pub qdisc_bypass: bool,
    /// Put the interface in promiscuous mode while the port is open.
    pub promiscuous: bool,
    /// Join fanout group `id` (hash mode) so that several sockets share the interface's traffic.
    pub fanout: Option<u16>,
    /// `block` (TPACKET_V3, batched) or `frame` (TPACKET_V2, each frame visible at once).
    pub rx_mode: RxMode,
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            name: String::new(),
            interface: String::new(),
            block_size: DEFAULT_BLOCK_SIZE,
            block_count: DEFAULT_BLOCK_COUNT,
            frame_size: 2048,
            block_timeout_ms: 1,
            qdisc_bypass: true,
            promiscuous: true,
            fanout: None,
            rx_mode: RxMode::Frame,
        }
    }
}

impl AfPacketConfig {
    /// Defaults for port `name` on `interface`: 128 blocks of 64 KiB per ring (8 MiB), 2048-byte
    /// TX slots (frames up to 2016 bytes), frame receive mode (1 ms block timeout if block mode is
    /// chosen), qdisc bypass, promiscuous, no fanout.
    pub fn new(name: &str, interface: &str) -> AfPacketConfig {
        AfPacketConfig {
            name: name.to_string(),
            interface: interface.to_string(),
            ..Default::default()
        }
    }

    /// The largest frame the TX ring can carry: `frame_size - 48` in block mode (TPACKET_V3
    /// slots), `frame_size - 32` in frame mode (TPACKET_V2 slots).
    pub fn max_tx_frame(&self) -> usize {
        (self.frame_size as usize).saturating_sub(TxLayout::of(self.rx_mode).data)
    }

    /// Checks every field; the error names the first bad one, its value and what is accepted.
    pub fn validate(&self) -> Result<(), AfPacketError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AfPacketError::Config {
                port: self.name.clone(),
                field,
                value,
                accepted,
            })
        };
        if self.name.is_empty() {
            return bad("name", format!("{:?}", self.name), "a non-empty port name");
        }
        if self.interface.is_empty()
            || self.interface.len() > 15
            || self.interface.contains(['/', '\0', ' '])
        {
            return bad(
                "interface",
                format!("{:?}", self.interface),
                "a kernel interface name of 1 to 15 bytes without '/', spaces or NUL",
            );
        }
        if self.block_size < PAGE_SIZE || !self.block_size.is_power_of_two() {
            return bad(
                "block_size",
                self.block_size.to_string(),
                "a power of two >= 4096 (one page)",
            );
        }
        if self.block_count == 0 {
            return bad("block_count", self.block_count.to_string(), "at least 1");
        }
        if u64::from(self.block_size) * u64::from(self.block_count) > MAX_RING_BYTES {
            return bad(
                "block_count",
                self.block_count.to_string(),
                "block_size * block_count <= 1 GiB per ring",
            );
        }
        if self.frame_size < 128 || self.frame_size & 15 != 0 || self.frame_size > self.block_size {
            return bad(
                "frame_size",
                self.frame_size.to_string(),
                "a multiple of 16 from 128 to block_size",
            );
        }
        if self.block_timeout_ms == 0 || self.block_timeout_ms > 1000 {
            return bad(
                "block_timeout_ms",
                self.block_timeout_ms.to_string(),
                "1 to 1000 milliseconds",
            );
        }
        Ok(())
    }
}

/// Errors opening an AF_PACKET port.
#[derive(Debug, Error)]
pub enum AfPacketError {
    #[error("af_packet port {port:?}: {field} = {value} is not accepted; expected {accepted}")]
    Config {
        port: String,
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error(
        "af_packet port {port:?}: interface {interface:?} does not exist in this network namespace"
    )]
    NoSuchInterface { port: String, interface: String },
    #[error("af_packet port {port:?}: cannot open network namespace {netns:?}")]
    Netns {
        port: String,
        netns: String,
        #[source]
        source: io::Error,
    },
    #[error("af_packet port {port:?} on {interface:?}: {step} failed (needs CAP_NET_RAW; kernel >= 4.20)")]
    Syscall {
        port: String,
        interface: String,
        step: &'static str,
        #[source]
        source: io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_mode_serde_names_and_default() {
        fn parse(s: &str) -> Result<RxMode, String> {
            use serde::de::IntoDeserializer;
            let d: serde::de::value::StrDeserializer<serde::de::value::Error> =
                s.into_deserializer();
            RxMode::deserialize(d).map_err(|e| e.to_string())
        }
        assert_eq!(parse("block"), Ok(RxMode::Block));
        assert_eq!(parse("frame"), Ok(RxMode::Frame));
        let err = parse("fast").unwrap_err();
        assert!(
            err.contains("rx_mode")
                && err.contains("fast")
                && err.contains("block")
                && err.contains("frame"),
            "{err}"
        );
        assert_eq!("frame".parse::<RxMode>(), Ok(RxMode::Frame));
        assert_eq!("Frame".parse::<RxMode>(), Err(RxModeError("Frame".into())));
        assert_eq!(AfPacketConfig::default().rx_mode, RxMode::Frame);
        let block_mode = AfPacketConfig {
            rx_mode: RxMode::Block,
            ..AfPacketConfig::new("p", "eth0")
        };
        assert_eq!(block_mode.max_tx_frame(), 2048 - 48);
    }

    fn field_of(c: &AfPacketConfig) -> Option<(&'static str, String)> {
        match c.validate() {
            Ok(()) => None,
            Err(AfPacketError::Config { field, value, .. }) => Some((field, value)),
            Err(e) => panic!("unexpected {e}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        let c = AfPacketConfig::new("p", "eth0");
        assert_eq!(c.validate().map_err(|e| e.to_string()), Ok(()));
        assert!(c.promiscuous && c.qdisc_bypass);
        assert_eq!(c.max_tx_frame(), 2048 - 32);
        assert_eq!(
            u64::from(c.block_size) * u64::from(c.block_count),
            8 << 20,
            "8 MiB per ring"
        );
    }

    #[test]
    fn each_bad_field_is_named_with_its_value() {
        let base = AfPacketConfig::new("p", "eth0");
        let cases: Vec<(AfPacketConfig, &str, &str)> = vec![
            (
                AfPacketConfig {
                    name: String::new(),
                    ..base.clone()
                },
                "name",
                "\"\"",
            ),
            (
                AfPacketConfig {
                    interface: "a-very-long-ifname".into(),
                    ..base.clone()
                },
                "interface",
                "\"a-very-long-ifname\"",
            ),
            (
                AfPacketConfig {
                    interface: "a/b".into(),
                    ..base.clone()
                },
                "interface",
                "\"a/b\"",
            ),
            (
                AfPacketConfig {
                    block_size: 6000,
                    ..base.clone()
                },
                "block_size",
                "6000",
            ),
            (
                AfPacketConfig {
                    block_size: 2048,
                    ..base.clone()
                },
                "block_size",
                "2048",
            ),
            (
                AfPacketConfig {
                    block_count: 0,
                    ..base.clone()
                },
                "block_count",
                "0",
            ),
            (
                AfPacketConfig {
                    block_count: 20000,
                    ..base.clone()
                },
                "block_count",
                "20000",
            ),
            (
                AfPacketConfig {
                    frame_size: 100,
                    ..base.clone()
                },
                "frame_size",
                "100",
            ),
            (
                AfPacketConfig {
                    frame_size: 2050,
                    ..base.clone()
                },
                "frame_size",
                "2050",
            ),
            (
                AfPacketConfig {
                    block_size: 4096,
                    frame_size: 8192,
                    ..base.clone()
                },
                "frame_size",
                "8192",
            ),
            (
                AfPacketConfig {
                    block_timeout_ms: 0,
                    ..base.clone()
                },
                "block_timeout_ms",
                "0",
            ),
        ];
        for (c, field, value) in cases {
            assert_eq!(field_of(&c), Some((field, value.to_string())), "{c:?}");
            let msg = c.validate().unwrap_err().to_string();
            assert!(
                msg.contains(field) && msg.contains(value) && msg.contains("expected"),
                "{msg}"
            );
        }
    }
}
