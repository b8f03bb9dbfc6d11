//! Opening ports from config: [`open_port`] is the one place that maps a [`PortConfig`] to a
//! backend of `vecswitch_ports` (memif, af_packet, af_xdp,
//! vhost_user). Adding a backend means a variant in
//! [`PortConfig`], its checks in [`crate::validate`] and one arm here.

use crate::config::{
    AfPacketPortConfig, AfXdpPortConfig, MemifMode, MemifPortConfig, MemifRole, PortConfig,
    VhostUserPortConfig,
};
use crate::validate::parse_mac;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpError, AfXdpPort};
use vecswitch_ports::memif::{self, MemifConfig, MemifPort};
use vecswitch_ports::vhost_user::{self, VhostUserConfig, VhostUserPort};
use vecswitch_ports::Port;

/// The memif backend's config for a `type = "memif"` port. `ring_size` must be a power of two
/// (validation checks it); its log2 is what the protocol carries.
pub fn memif_config(c: &MemifPortConfig) -> MemifConfig {
    let role = match c.role {
        MemifRole::Server => memif::Role::Server,
        MemifRole::Client => memif::Role::Client,
    };
    let mut m = MemifConfig::new(&c.name, &c.socket, c.id, role);
    m.ring_size_log2 = c.ring_size.max(1).ilog2().min(u32::from(u8::MAX)) as u8;
    m.buffer_size = c.buffer_size;
    m.mode = match c.mode {
        MemifMode::Polling => memif::Mode::Polling,
        MemifMode::Interrupt => memif::Mode::Interrupt,
    };
    m.secret = c.secret.clone();
    m.mac = c.mac.as_deref().and_then(parse_mac);
    m
}

/// The vhost-user backend's config for a `type = "vhost_user"` port.
pub fn vhost_user_config(c: &VhostUserPortConfig) -> VhostUserConfig {
    let role = match c.role {
        MemifRole::Server => vhost_user::Role::Server,
        MemifRole::Client => vhost_user::Role::Client,
    };
    VhostUserConfig::new(&c.name, &c.socket, role)
}

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
    if let Some(v) = c.rx_mode {
        a.rx_mode = v;
    }
    a
}

/// The af_xdp backend's config for a `type = "af_xdp"` port.
pub fn af_xdp_config(c: &AfXdpPortConfig) -> AfXdpConfig {
    let d = AfXdpConfig::new(&c.name, &c.interface);
    AfXdpConfig {
        queue: c.queue.unwrap_or(d.queue),
        mode: c.mode.unwrap_or(d.mode),
        frame_size: c.frame_size.unwrap_or(d.frame_size),
        rx_size: c.rx_size.unwrap_or(d.rx_size),
        tx_size: c.tx_size.unwrap_or(d.tx_size),
        busy_poll_us: c.busy_poll_us.unwrap_or(d.busy_poll_us),
        busy_poll_budget: c.busy_poll_budget.unwrap_or(d.busy_poll_budget),
        ..d
    }
}

/// Backend-specific checks that need the backend's own rules; returns (field, value, accepted).
pub fn check_backend(p: &PortConfig) -> Option<(String, String, String)> {
    match p {
        PortConfig::AfPacket(c) => match af_packet_config(c).validate() {
            Err(vecswitch_ports::af_packet::AfPacketError::Config {
                field,
                value,
                accepted,
                ..
            }) => Some((field.to_string(), value, accepted.to_string())),
            _ => None,
        },
        PortConfig::AfXdp(c) => match af_xdp_config(c).validate() {
            Err(AfXdpError::Config {
                field,
                value,
                accepted,
                ..
            }) => Some((field.to_string(), value, accepted.to_string())),
            _ => None,
        },
        PortConfig::Memif(c) => match memif_config(c).validate() {
            Err(memif::MemifError::InvalidConfig {
                field,
                value,
                accepted,
            }) => {
                let field = match field {
                    "socket_path" => "socket",
                    "ring_size_log2" => "ring_size",
                    f => f,
                };
                Some((field.to_string(), value, accepted.to_string()))
            }
            _ => None,
        },
        PortConfig::VhostUser(c) => match vhost_user_config(c).validate() {
            Err(vhost_user::VhostUserError::InvalidConfig {
                field,
                value,
                accepted,
            }) => {
                let field = if field == "socket_path" {
                    "socket"
                } else {
                    field
                };
                Some((field.to_string(), value, accepted.to_string()))
            }
            _ => None,
        },
    }
}

fn open_memif(c: &MemifPortConfig) -> Result<Box<dyn Port>, String> {
    MemifPort::new(memif_config(c))
        .map(|p| Box::new(p) as Box<dyn Port>)
        .map_err(|e| format!("memif port `{}`: {e}", c.name))
}

/// Opens the port `p` describes. The error names the port and the cause.
pub fn open_port(p: &PortConfig) -> Result<Box<dyn Port>, String> {
    match p {
        PortConfig::Memif(c) => open_memif(c),
        PortConfig::AfPacket(c) => AfPacketPort::open(af_packet_config(c))
            .map(|port| Box::new(port) as Box<dyn Port>)
            .map_err(|e| e.to_string()),
        PortConfig::AfXdp(c) => AfXdpPort::open(af_xdp_config(c))
            .map(|port| Box::new(port) as Box<dyn Port>)
            .map_err(|e| e.to_string()),
        PortConfig::VhostUser(c) => VhostUserPort::new(vhost_user_config(c))
            .map(|port| Box::new(port) as Box<dyn Port>)
            .map_err(|e| format!("vhost_user port `{}`: {e}", c.name)),
    }
}
