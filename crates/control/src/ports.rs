//! Opening ports from config: [`open_port`] is the one place that maps a [`PortConfig`] to a
//! backend of `vecswitch_ports` (memif, af_packet). Adding a backend means a variant in
//! [`PortConfig`], its checks in [`crate::validate`] and one arm here.

use crate::config::{AfPacketPortConfig, MemifPortConfig, PortConfig};
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::Port;

/// The af_packet backend's config for a `type = "af_packet"` port.
pub fn af_packet_config(c: &AfPacketPortConfig) -> AfPacketConfig {
    let mut a = AfPacketConfig::new(&c.name, &c.interface);
    if let Some(v) = c.block_size {
        a.block_size = v;
    }
    if let Some(v) = c.block_count {
        a.block_count = v;
    }
    if let Some(v) = c.frame_size {
        a.frame_size = v;
    }
    if let Some(v) = c.block_timeout_ms {
        a.block_timeout_ms = v;
    }
    if let Some(v) = c.qdisc_bypass {
        a.qdisc_bypass = v;
    }
    if let Some(v) = c.promiscuous {
        a.promiscuous = v;
    }
    a.fanout = c.fanout;
    a
}

/// Backend-specific checks that need the backend's own rules; returns (field, value, accepted).
pub fn check_backend(p: &PortConfig) -> Option<(String, String, String)> {
    match p {
        PortConfig::AfPacket(c) => match af_packet_config(c).validate() {
            Err(vecswitch_ports::af_packet::AfPacketError::Config { field, value, accepted, .. }) => {
                Some((field.to_string(), value, accepted.to_string()))
            }
            _ => None,
        },
        PortConfig::Memif(_) => None,
    }
}

fn open_memif(c: &MemifPortConfig) -> Result<Box<dyn Port>, String> {
    Err(format!("memif port `{}`: the memif backend is not available in this build", c.name))
}

/// Opens the port `p` describes. The error names the port and the cause.
pub fn open_port(p: &PortConfig) -> Result<Box<dyn Port>, String> {
    match p {
        PortConfig::Memif(c) => open_memif(c),
        PortConfig::AfPacket(c) => AfPacketPort::open(af_packet_config(c))
            .map(|port| Box::new(port) as Box<dyn Port>)
            .map_err(|e| e.to_string()),
    }
}
