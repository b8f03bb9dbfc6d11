//! The declarative config model: what `vecswitch run --config FILE.toml` reads and what `reload`
//! compares. Every struct rejects unknown keys (`deny_unknown_fields`), so a typo is an error, not a
//! silently ignored line. The model is only parsed here; [`crate::validate`] checks it as a whole.
//!
//! ```toml
//! [switch]
//! buffers = 16384
//! control_socket = "/run/vecswitch/vecswitch.sock"
//!
//! [[port]]
//! name = "p0"
//! type = "memif"
//! socket = "/run/vecswitch/memif.sock"
//! id = 0
//! role = "server"
//!
//! [[port]]
//! name = "v0"
//! type = "af_packet"
//! interface = "veth0"
//!
//! [[xconnect]]
//! ports = ["p0", "v0"]
//! ```
//!
//! Every key, its type, default and accepted values are listed in `docs/CONTROL.md`.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Default number of packet buffers in the pool.
pub const DEFAULT_BUFFERS: u32 = 16384;
/// Default path of the control socket.
pub const DEFAULT_CONTROL_SOCKET: &str = "/run/vecswitch/vecswitch.sock";
/// Default size of the MAC table (entries over all bridge-domains).
pub const DEFAULT_MAC_TABLE_ENTRIES: u32 = 1 << 20;
/// Default memif ring size (descriptors per ring).
pub const DEFAULT_RING_SIZE: u32 = 1024;
/// Default memif packet buffer size in bytes.
pub const DEFAULT_MEMIF_BUFFER_SIZE: u32 = 2048;
/// Default MAC aging time of a bridge-domain, seconds (0 = never age).
pub const DEFAULT_MAC_AGE: u32 = 300;
/// Default limit of MAC entries in one bridge-domain.
pub const DEFAULT_MAC_LIMIT: u32 = 1_000_000;

/// A whole switch configuration (one TOML file).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Process-wide settings; optional.
    #[serde(default)]
    pub switch: SwitchConfig,
    /// Ports, in order (`[[port]]`).
    #[serde(default, rename = "port")]
    pub ports: Vec<PortConfig>,
    /// E-Line cross-connects (`[[xconnect]]`).
    #[serde(default, rename = "xconnect")]
    pub xconnects: Vec<XconnectConfig>,
    /// E-LAN bridge-domains (`[[bridge]]`).
    #[serde(default, rename = "bridge")]
    pub bridges: Vec<BridgeConfig>,
}

/// `[switch]`: settings fixed for the life of the process (a reload cannot change them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchConfig {
    /// Packet buffers in the pool.
    #[serde(default = "default_buffers")]
    pub buffers: u32,
    /// Path of the control socket (`--socket` overrides it).
    #[serde(default = "default_control_socket")]
    pub control_socket: String,
    /// CPU the worker thread is pinned to; none = not pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_cpu: Option<u32>,
    /// MAC table entries over all bridge-domains (preallocated).
    #[serde(default = "default_mac_table_entries")]
    pub mac_table_entries: u32,
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffers: DEFAULT_BUFFERS,
            control_socket: DEFAULT_CONTROL_SOCKET.to_string(),
            worker_cpu: None,
            mac_table_entries: DEFAULT_MAC_TABLE_ENTRIES,
        }
    }
}

fn default_buffers() -> u32 {
    DEFAULT_BUFFERS
}
fn default_control_socket() -> String {
    DEFAULT_CONTROL_SOCKET.to_string()
}
fn default_mac_table_entries() -> u32 {
    DEFAULT_MAC_TABLE_ENTRIES
}
fn default_ring_size() -> u32 {
    DEFAULT_RING_SIZE
}
fn default_memif_buffer_size() -> u32 {
    DEFAULT_MEMIF_BUFFER_SIZE
}
fn default_true() -> bool {
    true
}
fn default_mac_age() -> u32 {
    DEFAULT_MAC_AGE
}
fn default_mac_limit() -> u32 {
    DEFAULT_MAC_LIMIT
}
fn is_true(b: &bool) -> bool {
    *b
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
        }
    }
}

/// `[[xconnect]]`: an E-Line. Either `ports = [A, B]` (A→B, and B→A unless `bidirectional = false`)
/// or `from = A` / `to = B` for one direction.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XconnectConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub bidirectional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl XconnectConfig {
    /// A one-direction cross-connect `from` → `to`.
    pub fn one_way(from: &str, to: &str) -> XconnectConfig {
        XconnectConfig {
            ports: None,
            bidirectional: true,
            from: Some(from.to_string()),
            to: Some(to.to_string()),
        }
    }

    /// The directed (from, to) pairs this entry asks for. Meaningful after validation; entries
    /// that are malformed yield what can be read from them.
    pub fn directions(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(p) = &self.ports {
            if p.len() == 2 {
                out.push((p[0].clone(), p[1].clone()));
                if self.bidirectional {
                    out.push((p[1].clone(), p[0].clone()));
                }
            }
        } else if let (Some(f), Some(t)) = (&self.from, &self.to) {
            out.push((f.clone(), t.clone()));
        }
        out
    }
}

/// `[[bridge]]`: an E-LAN bridge-domain with MAC learning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeConfig {
    pub name: String,
    /// Member ports.
    #[serde(default)]
    pub ports: Vec<String>,
    /// Learn source MACs.
    #[serde(default = "default_true")]
    pub learn: bool,
    /// Forward known unicast by the MAC table; when false every frame is dropped after learning.
    #[serde(default = "default_true")]
    pub forward: bool,
    /// Flood broadcast and multicast frames to all members.
    #[serde(default = "default_true")]
    pub flood: bool,
    /// Flood frames whose destination MAC is unknown (unknown-unicast flooding).
    #[serde(default = "default_true")]
    pub uu_flood: bool,
    /// Seconds after which a learned MAC not seen again is removed; 0 = never.
    #[serde(default = "default_mac_age")]
    pub mac_age: u32,
    /// Most MAC entries (learned + static) the bridge-domain holds.
    #[serde(default = "default_mac_limit")]
    pub mac_limit: u32,
    /// Static MAC entries (`[[bridge.static_mac]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_mac: Vec<StaticMacConfig>,
}

impl BridgeConfig {
    /// A bridge-domain with default settings and no members.
    pub fn new(name: &str) -> BridgeConfig {
        BridgeConfig {
            name: name.to_string(),
            ports: Vec::new(),
            learn: true,
            forward: true,
            flood: true,
            uu_flood: true,
            mac_age: DEFAULT_MAC_AGE,
            mac_limit: DEFAULT_MAC_LIMIT,
            static_mac: Vec::new(),
        }
    }

    /// Whether the bridge-domain's own settings (not members, not static MACs) equal `other`'s.
    pub fn same_settings(&self, other: &BridgeConfig) -> bool {
        self.learn == other.learn
            && self.forward == other.forward
            && self.flood == other.flood
            && self.uu_flood == other.uu_flood
            && self.mac_age == other.mac_age
            && self.mac_limit == other.mac_limit
    }
}

/// `[[bridge.static_mac]]`: a MAC address pinned to a member port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticMacConfig {
    pub mac: String,
    pub port: String,
}

/// A config file that could not be read or parsed (syntax, unknown key, wrong type).
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("config {origin}: {message}")]
    Toml { origin: String, message: String },
}

impl Config {
    /// Parses TOML text; `origin` names it in errors (a file path or `<inline>`).
    pub fn from_toml(text: &str, origin: &str) -> Result<Config, ParseError> {
        toml::from_str(text).map_err(|e| ParseError::Toml {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Reads and parses a TOML file.
    pub fn from_file(path: &Path) -> Result<Config, ParseError> {
        let text = std::fs::read_to_string(path).map_err(|source| ParseError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::from_toml(&text, &path.display().to_string())
    }

    /// The config as TOML text that [`Config::from_toml`] reads back to an equal config (for
    /// tools that write configs, e.g. the lab's topologies).
    pub fn to_toml(&self) -> String {
        // Every field is a string, number, bool, table or array of tables: serializing cannot fail.
        toml::to_string(self).unwrap_or_default()
    }

    /// The port named `name`.
    pub fn port(&self, name: &str) -> Option<&PortConfig> {
        self.ports.iter().find(|p| p.name() == name)
    }

    /// The bridge-domain named `name`.
    pub fn bridge(&self, name: &str) -> Option<&BridgeConfig> {
        self.bridges.iter().find(|b| b.name == name)
    }

    /// Every directed cross-connect (from, to), in config order.
    pub fn xconnect_directions(&self) -> Vec<(String, String)> {
        self.xconnects.iter().flat_map(|x| x.directions()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
[switch]
buffers = 8192
control_socket = "/tmp/x.sock"
worker_cpu = 1

[[port]]
name = "p0"
type = "memif"
socket = "/run/vecswitch/memif.sock"
id = 0
role = "server"
ring_size = 1024
mode = "polling"

[[port]]
name = "p1"
type = "memif"
socket = "@abstract"
id = 1
role = "client"
mode = "interrupt"
secret = "s3cret"
mac = "02:00:00:00:00:01"
admin = "down"

[[port]]
name = "v0"
type = "af_packet"
interface = "veth0"

[[xconnect]]
ports = ["p0", "p1"]

[[bridge]]
name = "br0"
ports = ["v0"]
learn = false
mac_age = 0
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:09"
  port = "v0"
"#;

    #[test]
    fn parses_every_section_and_applies_defaults() {
        let c = Config::from_toml(FULL, "t").unwrap();
        assert_eq!(c.switch.buffers, 8192);
        assert_eq!(c.switch.worker_cpu, Some(1));
        assert_eq!(c.ports.len(), 3);
        match &c.ports[1] {
            PortConfig::Memif(m) => {
                assert_eq!(m.role, MemifRole::Client);
                assert_eq!(m.mode, MemifMode::Interrupt);
                assert_eq!(m.ring_size, DEFAULT_RING_SIZE);
                assert_eq!(m.buffer_size, DEFAULT_MEMIF_BUFFER_SIZE);
                assert_eq!(m.admin, AdminState::Down);
                assert_eq!(m.secret.as_deref(), Some("s3cret"));
            }
            other => panic!("expected memif, got {other:?}"),
        }
        assert_eq!(c.ports[2].type_name(), "af_packet");
        assert_eq!(
            c.xconnect_directions(),
            vec![("p0".into(), "p1".into()), ("p1".into(), "p0".into())]
        );
        let b = c.bridge("br0").unwrap();
        assert!(!b.learn && b.flood && b.uu_flood);
        assert_eq!(b.mac_age, 0);
        assert_eq!(b.mac_limit, DEFAULT_MAC_LIMIT);
        assert_eq!(b.static_mac[0].port, "v0");
    }

    #[test]
    fn af_packet_rx_mode_parses_defaults_to_frame_and_names_bad_values() {
        let port = |extra: &str| {
            format!("[[port]]\nname = \"p\"\ntype = \"af_packet\"\ninterface = \"x\"\n{extra}")
        };
        let mode = |c: &Config| match &c.ports[0] {
            PortConfig::AfPacket(a) => crate::ports::af_packet_config(a).rx_mode,
            other => panic!("expected af_packet, got {other:?}"),
        };
        use vecswitch_ports::af_packet::RxMode;
        assert_eq!(
            mode(&Config::from_toml(&port(""), "t").unwrap()),
            RxMode::Frame
        );
        let c = Config::from_toml(&port("rx_mode = \"block\"\n"), "t").unwrap();
        assert_eq!(mode(&c), RxMode::Block);
        assert_eq!(Config::from_toml(&c.to_toml(), "t").unwrap(), c);
        let e = Config::from_toml(&port("rx_mode = \"fast\"\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("rx_mode")
                && e.contains("fast")
                && e.contains("block")
                && e.contains("frame"),
            "{e}"
        );
    }

    #[test]
    fn af_xdp_port_parses_round_trips_and_names_bad_mode() {
        let port = |extra: &str| {
            format!("[[port]]\nname = \"x\"\ntype = \"af_xdp\"\ninterface = \"v\"\n{extra}")
        };
        let c = Config::from_toml(&port("mode = \"skb\"\nrx_size = 4096\n"), "t").unwrap();
        assert_eq!(c.ports[0].type_name(), "af_xdp");
        let PortConfig::AfXdp(x) = &c.ports[0] else {
            panic!("expected af_xdp, got {:?}", c.ports[0]);
        };
        let b = crate::ports::af_xdp_config(x);
        use vecswitch_ports::af_xdp::XdpMode;
        assert_eq!((b.mode, b.rx_size, b.tx_size), (XdpMode::Skb, 4096, 2048));
        assert_eq!(Config::from_toml(&c.to_toml(), "t").unwrap(), c);
        let e = Config::from_toml(&port("mode = \"turbo\"\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mode") && e.contains("turbo") && e.contains("native"),
            "{e}"
        );
        let e = Config::from_toml(&port("zero_copy = true\n"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("zero_copy"), "{e}");
    }

    #[test]
    fn empty_file_is_an_empty_switch_with_defaults() {
        let c = Config::from_toml("", "t").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.switch.control_socket, DEFAULT_CONTROL_SOCKET);
    }

    #[test]
    fn unknown_keys_are_rejected_with_their_name() {
        let e =
            Config::from_toml("[[bridge]]\nname = \"b\"\nlearning = true\n", "f.toml").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("learning"), "{s}");
        assert!(s.contains("f.toml"), "{s}");
        let e = Config::from_toml(
            "[[port]]\nname = \"p\"\ntype = \"af_packet\"\ninterface = \"x\"\nring_size = 1\n",
            "t",
        )
        .unwrap_err();
        assert!(e.to_string().contains("ring_size"), "{e}");
        let e = Config::from_toml("[[port]]\nname = \"p\"\ntype = \"tap\"\n", "t").unwrap_err();
        assert!(e.to_string().contains("tap"), "{e}");
    }

    #[test]
    fn serializes_back_to_an_equal_config() {
        let c = Config::from_toml(FULL, "t").unwrap();
        let text = c.to_toml();
        assert_eq!(Config::from_toml(&text, "t").unwrap(), c);
    }

    #[test]
    fn one_way_xconnects_have_one_direction() {
        let x = XconnectConfig {
            ports: Some(vec!["a".into(), "b".into()]),
            bidirectional: false,
            ..Default::default()
        };
        assert_eq!(x.directions(), vec![("a".into(), "b".into())]);
        assert_eq!(
            XconnectConfig::one_way("c", "d").directions(),
            vec![("c".into(), "d".into())]
        );
    }
}
