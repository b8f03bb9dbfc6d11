//! Ports in the config: the `[[port]]` serde types (the config *is* these types), their
//! validation ([`validate_ports`]), the port config object ([`PortObj`], rank 0 of the generic
//! diff) and [`open_port`], the one place that maps a [`PortConfig`] to a backend of
//! `vecswitch_ports` (memif, af_packet, af_xdp, vhost_user). Adding a backend means a variant in
//! [`PortConfig`], its checks in [`validate_ports`] and one arm in [`open_port`].
//!
//! Port configs live here, in the control crate, and not in the switch: a port's config is
//! mostly the backend's settings (crates/ports), and turning it into an open backend needs the
//! process's resources (sockets, interfaces) and is done before the switch is touched. The switch
//! only ever sees an opened `Box<dyn Port>`.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketError, AfPacketPort};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpError, AfXdpPort};
use vecswitch_ports::memif::{self, MemifConfig, MemifPort};
use vecswitch_ports::vhost_user::{self, VhostUserConfig, VhostUserPort};
use vecswitch_ports::Port;
use vecswitch_switch::interface::KIND_PORT;
use vecswitch_switch::object::{
    check_name, q, same_as, ApplyCx, ConfigObject, Obj, ObjectKey, Validation,
};
use vecswitch_switch::{Switch, SwitchError};
use vecswitch_wire::EthernetAddress;

/// Default memif ring size (descriptors per ring).
pub const DEFAULT_RING_SIZE: u32 = 1024;
/// Default memif packet buffer size in bytes.
pub const DEFAULT_MEMIF_BUFFER_SIZE: u32 = 2048;
/// Longest Unix socket path (`sun_path` is 108 bytes with the terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;
/// Longest kernel interface name (`IFNAMSIZ` - 1).
pub const MAX_IFNAME: usize = 15;
/// Longest memif secret (the protocol's `secret[24]`).
pub const MAX_MEMIF_SECRET: usize = 24;
/// Accepted memif ring sizes: powers of two from 2^8 to 2^14 (the `log2_ring_size` field).
pub const RING_SIZE_RANGE: std::ops::RangeInclusive<u32> = 256..=16384;
/// Accepted memif buffer sizes, bytes (the protocol carries it in 16 bits).
pub const MEMIF_BUFFER_SIZE_RANGE: std::ops::RangeInclusive<u32> = 128..=65535;

fn default_ring_size() -> u32 {
    DEFAULT_RING_SIZE
}
fn default_memif_buffer_size() -> u32 {
    DEFAULT_MEMIF_BUFFER_SIZE
}

/// Administrative state of a port (`set interface state X up|down` in VPP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AdminState {
    #[default]
    Up,
    Down,
}

impl AdminState {
    pub fn is_up(self) -> bool {
        self == AdminState::Up
    }
}

/// `[[port]]`: one port; `type` selects the backend and which other keys apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PortConfig {
    /// A memif shared-memory interface (DPDK `net_memif` / VPP memif compatible).
    Memif(MemifPortConfig),
    /// A kernel interface opened with AF_PACKET.
    AfPacket(AfPacketPortConfig),
    /// A kernel interface opened with AF_XDP.
    AfXdp(AfXdpPortConfig),
    /// A vhost-user virtio-net device for a QEMU guest or DPDK's virtio-user.
    VhostUser(VhostUserPortConfig),
}

impl PortConfig {
    /// The port's name.
    pub fn name(&self) -> &str {
        match self {
            PortConfig::Memif(c) => &c.name,
            PortConfig::AfPacket(c) => &c.name,
            PortConfig::AfXdp(c) => &c.name,
            PortConfig::VhostUser(c) => &c.name,
        }
    }

    /// The `type` key as written in the config.
    pub fn type_name(&self) -> &'static str {
        match self {
            PortConfig::Memif(_) => "memif",
            PortConfig::AfPacket(_) => "af_packet",
            PortConfig::AfXdp(_) => "af_xdp",
            PortConfig::VhostUser(_) => "vhost_user",
        }
    }

    /// Administrative state.
    pub fn admin(&self) -> AdminState {
        match self {
            PortConfig::Memif(c) => c.admin,
            PortConfig::AfPacket(c) => c.admin,
            PortConfig::AfXdp(c) => c.admin,
            PortConfig::VhostUser(c) => c.admin,
        }
    }

    /// Sets the administrative state.
    pub fn set_admin(&mut self, admin: AdminState) {
        match self {
            PortConfig::Memif(c) => c.admin = admin,
            PortConfig::AfPacket(c) => c.admin = admin,
            PortConfig::AfXdp(c) => c.admin = admin,
            PortConfig::VhostUser(c) => c.admin = admin,
        }
    }

    /// Whether `self` and `other` describe the same backend instance, ignoring the admin state
    /// (which can change on a running port without re-creating it).
    pub fn same_backend(&self, other: &PortConfig) -> bool {
        let mut a = self.clone();
        a.set_admin(AdminState::Up);
        let mut b = other.clone();
        b.set_admin(AdminState::Up);
        a == b
    }
}

/// memif role on the control channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemifRole {
    /// Listens on the socket and owns the shared memory regions' layout agreement (VPP "master").
    #[default]
    Server,
    /// Connects to a server (VPP "slave").
    Client,
}

/// memif receive mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemifMode {
    /// The worker polls the rings.
    #[default]
    Polling,
    /// The worker sleeps on the interrupt eventfd when the rings are idle.
    Interrupt,
}

/// `type = "memif"` keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemifPortConfig {
    pub name: String,
    /// Control socket path; a leading `@` names an abstract socket.
    pub socket: String,
    /// Interface id on that socket (several interfaces can share one socket).
    #[serde(default)]
    pub id: u32,
    #[serde(default)]
    pub role: MemifRole,
    /// Descriptors per ring: a power of two in 256..=16384.
    #[serde(default = "default_ring_size")]
    pub ring_size: u32,
    #[serde(default)]
    pub mode: MemifMode,
    /// Bytes per packet buffer in the shared memory.
    #[serde(default = "default_memif_buffer_size")]
    pub buffer_size: u32,
    /// Shared secret the peer must present (at most 24 bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// Interface MAC address (`aa:bb:cc:dd:ee:ff`); none = a locally administered one is generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    #[serde(default)]
    pub admin: AdminState,
}

/// `type = "vhost_user"` keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VhostUserPortConfig {
    pub name: String,
    /// Path of the vhost-user Unix socket (no abstract names).
    pub socket: String,
    /// `server`: we listen (QEMU `-chardev socket,path=…`, DPDK `server=0`); `client`: we
    /// connect, and reconnect after the frontend restarts (QEMU `server=on`, DPDK `server=1`).
    #[serde(default)]
    pub role: MemifRole,
    #[serde(default)]
    pub admin: AdminState,
}

/// `type = "af_packet"` keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfPacketPortConfig {
    pub name: String,
    /// Kernel interface name (e.g. `veth0`).
    pub interface: String,
    #[serde(default)]
    pub admin: AdminState,
    /// Bytes per ring block (power of two ≥ 4096); default 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u32>,
    /// Blocks per ring; default 128 (8 MiB per ring: the ring's depth in time, docs/CONTROL.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_count: Option<u32>,
    /// Bytes per TX slot (multiple of 16, 128..=block_size); default 2048.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_size: Option<u32>,
    /// Milliseconds the kernel keeps a partly filled RX block, 1..=1000; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_timeout_ms: Option<u32>,
    /// Send without the interface's qdisc (`PACKET_QDISC_BYPASS`); default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc_bypass: Option<bool>,
    /// Promiscuous mode while open; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promiscuous: Option<bool>,
    /// PACKET_FANOUT group id (hash mode); default none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<u16>,
    /// RX ring mode, `"block"` (TPACKET_V3, batched) or `"frame"` (TPACKET_V2, lowest latency);
    /// default frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_mode: Option<vecswitch_ports::af_packet::RxMode>,
}

impl AfPacketPortConfig {
    /// An af_packet port with every optional key at its default.
    pub fn new(name: &str, interface: &str) -> AfPacketPortConfig {
        AfPacketPortConfig {
            name: name.to_string(),
            interface: interface.to_string(),
            admin: AdminState::Up,
            block_size: None,
            block_count: None,
            frame_size: None,
            block_timeout_ms: None,
            qdisc_bypass: None,
            promiscuous: None,
            fanout: None,
            rx_mode: None,
        }
    }
}

/// `type = "af_xdp"` keys (vecswitch_ports::af_xdp::AfXdpConfig holds the defaults and the rules).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AfXdpPortConfig {
    pub name: String,
    /// Kernel interface name (e.g. `veth0`).
    pub interface: String,
    #[serde(default)]
    pub admin: AdminState,
    /// Receive/transmit queue of the interface, 0..=255; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
    /// XDP attach mode, `"auto"` (native, else SKB), `"native"` or `"skb"`; default auto.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<vecswitch_ports::af_xdp::XdpMode>,
    /// Bytes per UMEM chunk, 2048 or 4096; default 2048.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_size: Option<u32>,
    /// RX/fill ring entries, a power of two in 64..=16384; default 2048.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_size: Option<u32>,
    /// TX/completion ring entries, a power of two in 64..=16384; default 2048.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_size: Option<u32>,
    /// `SO_BUSY_POLL` microseconds (with `SO_PREFER_BUSY_POLL`), 0..=1000; default 0 (off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u32>,
    /// `SO_BUSY_POLL_BUDGET`, 1..=1024; default 64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_budget: Option<u32>,
    /// The interface's `napi_defer_hard_irqs`, written at open, 0..=100 (with busy polling and
    /// `gro_flush_timeout_us`); default 0 (the device's setting is left alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub napi_defer_hard_irqs: Option<u32>,
    /// The interface's `gro_flush_timeout` in µs, written at open with `napi_defer_hard_irqs`,
    /// 0..=10000; default 0 (left alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_flush_timeout_us: Option<u32>,
}

impl AfXdpPortConfig {
    /// An af_xdp port with every optional key at its default.
    pub fn new(name: &str, interface: &str) -> AfXdpPortConfig {
        AfXdpPortConfig {
            name: name.to_string(),
            interface: interface.to_string(),
            admin: AdminState::Up,
            queue: None,
            mode: None,
            frame_size: None,
            rx_size: None,
            tx_size: None,
            busy_poll_us: None,
            busy_poll_budget: None,
            napi_defer_hard_irqs: None,
            gro_flush_timeout_us: None,
        }
    }
}

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
    m.mac = c
        .mac
        .as_deref()
        .and_then(|s| s.parse::<EthernetAddress>().ok())
        .map(|a| a.0);
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
        napi_defer_hard_irqs: c.napi_defer_hard_irqs.unwrap_or(d.napi_defer_hard_irqs),
        gro_flush_timeout_us: c.gro_flush_timeout_us.unwrap_or(d.gro_flush_timeout_us),
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

/// A port that could not be opened: the port and the backend's own error.
#[derive(Debug, thiserror::Error)]
pub enum PortOpenError {
    #[error("memif port `{port}`: {source}")]
    Memif {
        port: String,
        #[source]
        source: memif::MemifError,
    },
    #[error(transparent)]
    AfPacket(#[from] AfPacketError),
    #[error(transparent)]
    AfXdp(#[from] AfXdpError),
    #[error("vhost_user port `{port}`: {source}")]
    VhostUser {
        port: String,
        #[source]
        source: vhost_user::VhostUserError,
    },
    /// A backend outside this crate (a test's factory): its reason.
    #[error("cannot open {port}: {reason}")]
    Other { port: String, reason: String },
}

/// Opens a port from its config ([`open_port`], or a fake in tests).
pub type PortFactory = dyn Fn(&PortConfig) -> Result<Box<dyn Port>, PortOpenError> + Send + Sync;

/// Opens the port `p` describes. The error names the port and the cause.
pub fn open_port(p: &PortConfig) -> Result<Box<dyn Port>, PortOpenError> {
    Ok(match p {
        PortConfig::Memif(c) => {
            Box::new(
                MemifPort::new(memif_config(c)).map_err(|source| PortOpenError::Memif {
                    port: c.name.clone(),
                    source,
                })?,
            )
        }
        PortConfig::AfPacket(c) => Box::new(AfPacketPort::open(af_packet_config(c))?),
        PortConfig::AfXdp(c) => Box::new(AfXdpPort::open(af_xdp_config(c))?),
        PortConfig::VhostUser(c) => {
            Box::new(VhostUserPort::new(vhost_user_config(c)).map_err(|source| {
                PortOpenError::VhostUser {
                    port: c.name.clone(),
                    source,
                }
            })?)
        }
    })
}

/// A port as a config object (rank 0: depends on nothing). Its backend is opened by the apply
/// engine before its turn and handed over in [`ApplyCx::ports`]; a removal puts the port it took
/// out there, so that an undo re-adds the same object. An admin-state change is made in place; any
/// other change re-creates the port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortObj(pub PortConfig);

impl ConfigObject for PortObj {
    fn key(&self) -> ObjectKey {
        ObjectKey::new(KIND_PORT, self.0.name())
    }
    fn rank(&self) -> u8 {
        0
    }
    fn depends_on(&self) -> Vec<ObjectKey> {
        Vec::new()
    }
    fn modifiable_from(&self, old: &dyn ConfigObject) -> bool {
        old.as_any()
            .downcast_ref::<PortObj>()
            .is_some_and(|o| o.0.same_backend(&self.0))
    }
    fn same(&self, other: &dyn ConfigObject) -> bool {
        same_as(self, other)
    }
    fn describe_add(&self) -> String {
        format!("add {} port {}", self.0.type_name(), self.0.name())
    }
    fn describe_remove(&self) -> String {
        format!("delete port {}", self.0.name())
    }
    fn describe_modify(&self, _old: &dyn ConfigObject) -> String {
        format!(
            "set port {} {}",
            self.0.name(),
            if self.0.admin().is_up() { "up" } else { "down" }
        )
    }
    fn add(&self, sw: &mut Switch, cx: &mut ApplyCx) -> Result<(), SwitchError> {
        let name = self.0.name();
        let port = cx.ports.remove(name).ok_or_else(|| SwitchError::Feature {
            reason: format!("port `{name}` was not opened before its turn"),
        })?;
        sw.add_port(name, port)?;
        if !self.0.admin().is_up() {
            if let Err(e) = sw.set_port_admin(name, false) {
                // Keep all-or-nothing: take the port out again.
                if let Ok(p) = sw.delete_port(name) {
                    cx.ports.insert(name.to_string(), p);
                }
                return Err(e);
            }
        }
        Ok(())
    }
    fn remove(&self, sw: &mut Switch, cx: &mut ApplyCx) -> Result<(), SwitchError> {
        let p = sw.delete_port(self.0.name())?;
        cx.ports.insert(self.0.name().to_string(), p);
        Ok(())
    }
    fn modify(
        &self,
        _old: &dyn ConfigObject,
        sw: &mut Switch,
        _cx: &mut ApplyCx,
    ) -> Result<(), SwitchError> {
        sw.set_port_admin(self.0.name(), self.0.admin().is_up())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The objects of `[[port]]`.
pub fn port_objects(ports: &[PortConfig], out: &mut Vec<Obj>) {
    for p in ports {
        out.push(Arc::new(PortObj(p.clone())));
    }
}

/// Validates `[[port]]`; adds the valid, unique port names to [`Validation::interfaces`].
pub fn validate_ports(ports: &[PortConfig], e: &mut Validation) {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut memif_ids: HashMap<(&str, u32), usize> = HashMap::new();
    let mut memif_roles: HashMap<&str, (MemifRole, usize)> = HashMap::new();
    let mut ifaces: HashMap<&str, usize> = HashMap::new();
    let mut vhost_socks: HashMap<&str, usize> = HashMap::new();
    for (i, p) in ports.iter().enumerate() {
        // The backend's own rules for its tuning keys (name and interface are checked below).
        if let Some((field, value, accepted)) = check_backend(p) {
            // Skip what the checks below report with their own words (a vhost_user socket has
            // no check below: the backend's is the one).
            let below = match p {
                PortConfig::VhostUser(_) => field == "name",
                _ => matches!(
                    field.as_str(),
                    "name" | "interface" | "socket" | "ring_size" | "buffer_size" | "secret"
                ),
            };
            if !below {
                e.push(format!("port[{i}].{field}"), value, accepted);
            }
        }
        let name = p.name();
        if let Err(why) = check_name(name) {
            e.push(format!("port[{i}].name"), q(name), why);
        } else if let Some(first) = names.get(name) {
            e.push(
                format!("port[{i}].name"),
                q(name),
                format!("a unique name (port[{first}] has it already)"),
            );
        } else {
            names.insert(name, i);
            let why_not = match p {
                PortConfig::AfXdp(x) if x.mode == Some(vecswitch_ports::af_xdp::XdpMode::Skb) => {
                    Some(
                        "its mode = \"skb\" (native XDP needed: mode \"native\" or \"auto\")"
                            .to_string(),
                    )
                }
                PortConfig::AfXdp(x) if !x.admin.is_up() => Some(
                    "it is admin = \"down\" (the kernel would forward its frames regardless)"
                        .to_string(),
                ),
                PortConfig::AfXdp(_) => None,
                other => Some(format!(
                    "it is type = {:?} (af_xdp needed)",
                    other.type_name()
                )),
            };
            e.kernel_redirect.insert(name.to_string(), why_not);
        }
        match p {
            PortConfig::Memif(m) => {
                let path = &m.socket;
                let plen = path.len();
                if path.is_empty() || path == "@" || plen > MAX_SOCKET_PATH || path.contains('\0') {
                    e.push(
                        format!("port[{i}].socket"),
                        q(path),
                        format!("a socket path of 1..={MAX_SOCKET_PATH} bytes, or @NAME for an abstract socket"),
                    );
                }
                if !m.ring_size.is_power_of_two() || !RING_SIZE_RANGE.contains(&m.ring_size) {
                    e.push(
                        format!("port[{i}].ring_size"),
                        m.ring_size,
                        "a power of two in 256..=16384 (256, 512, 1024, 2048, 4096, 8192, 16384)",
                    );
                }
                if !MEMIF_BUFFER_SIZE_RANGE.contains(&m.buffer_size) {
                    e.push(
                        format!("port[{i}].buffer_size"),
                        m.buffer_size,
                        format!("a buffer size in {MEMIF_BUFFER_SIZE_RANGE:?} bytes"),
                    );
                }
                if let Some(s) = &m.secret {
                    if s.is_empty() || s.len() > MAX_MEMIF_SECRET || s.contains('\0') {
                        e.push(
                            format!("port[{i}].secret"),
                            q(s),
                            format!("1..={MAX_MEMIF_SECRET} bytes without NUL"),
                        );
                    }
                }
                if let Some(mac) = &m.mac {
                    match mac.parse::<EthernetAddress>().ok() {
                        None => e.push(
                            format!("port[{i}].mac"),
                            q(mac),
                            "a MAC address like 02:00:00:00:00:01",
                        ),
                        Some(b) if b.is_multicast() => e.push(
                            format!("port[{i}].mac"),
                            q(mac),
                            "a unicast MAC (lowest bit of the first byte clear)",
                        ),
                        Some(_) => {}
                    }
                }
                if let Some(first) = memif_ids.insert((path.as_str(), m.id), i) {
                    e.push(
                        format!("port[{i}].id"),
                        m.id,
                        format!("an id unused on socket {path:?} (port[{first}] has it already)"),
                    );
                }
                match memif_roles.get(path.as_str()) {
                    Some((role, first)) if *role != m.role => e.push(
                        format!("port[{i}].role"),
                        q(&format!("{:?}", m.role).to_lowercase()),
                        format!(
                            "the same role as port[{first}] on socket {path:?} (one socket is either listened on or connected to)"
                        ),
                    ),
                    Some(_) => {}
                    None => {
                        memif_roles.insert(path.as_str(), (m.role, i));
                    }
                }
            }
            PortConfig::AfPacket(AfPacketPortConfig { interface: n, .. })
            | PortConfig::AfXdp(AfXdpPortConfig { interface: n, .. }) => {
                if n.is_empty()
                    || n.len() > MAX_IFNAME
                    || n.contains('/')
                    || n.contains(char::is_whitespace)
                {
                    e.push(
                        format!("port[{i}].interface"),
                        q(n),
                        format!("a kernel interface name of 1..={MAX_IFNAME} bytes without '/' or spaces"),
                    );
                } else if let Some(first) = ifaces.insert(n.as_str(), i) {
                    e.push(
                        format!("port[{i}].interface"),
                        q(n),
                        format!("an interface not opened by another port (port[{first}] has it)"),
                    );
                }
            }
            PortConfig::VhostUser(v) => {
                // The backend's own check (length, NUL, no abstract name) came through
                // check_backend; here: one vhost-user device per socket.
                if let Some(first) = vhost_socks.insert(v.socket.as_str(), i) {
                    e.push(
                        format!("port[{i}].socket"),
                        q(&v.socket),
                        format!(
                            "a socket not used by another vhost_user port (port[{first}] has it)"
                        ),
                    );
                }
            }
        }
    }
    e.interfaces.extend(names.into_keys().map(str::to_string));
}

/// The port config of a port object (`None` for objects of other kinds).
pub fn port_of(o: &dyn ConfigObject) -> Option<&PortConfig> {
    o.as_any().downcast_ref::<PortObj>().map(|p| &p.0)
}
