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
/// Default directory `ctl capture` files are created in.
pub const DEFAULT_CAPTURE_DIR: &str = "/run/vecswitch/capture";
/// Default size of the MAC table (entries over all bridge-domains).
pub const DEFAULT_MAC_TABLE_ENTRIES: u32 = 1 << 20;
pub use crate::ports::{
    AdminState, AfPacketPortConfig, AfXdpPortConfig, MemifMode, MemifPortConfig, MemifRole,
    PortConfig, VhostUserPortConfig, DEFAULT_MEMIF_BUFFER_SIZE, DEFAULT_RING_SIZE,
};
pub use vecswitch_switch::l2::config::{BridgeConfig, StaticMacConfig, XconnectConfig};
/// Default MAC aging time of a bridge-domain, seconds (0 = never age).
pub const DEFAULT_MAC_AGE: u32 = vecswitch_switch::l2::DEFAULT_MAC_AGE_S;
/// Default limit of learned MAC entries in one bridge-domain.
pub const DEFAULT_MAC_LIMIT: u32 = vecswitch_switch::l2::DEFAULT_MAC_LIMIT;

/// The whole config: declared with the section table, one line per section
/// (`crate::sections`, `config_sections!`).
pub use crate::sections::Config;

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
    /// The worker thread's scheduling (`fifo:N`, `rr:N`, `other`; vecswitch_switch::worker::
    /// WorkerSched); none = left as started (SCHED_OTHER).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_priority: Option<String>,
    /// MAC table entries over all bridge-domains (preallocated).
    #[serde(default = "default_mac_table_entries")]
    pub mac_table_entries: u32,
    /// Directory `ctl capture` creates its pcap files in; the only place it may write.
    #[serde(
        default = "default_capture_dir",
        skip_serializing_if = "is_default_capture_dir"
    )]
    pub capture_dir: String,
    /// Address of the Prometheus metrics endpoint (`GET /metrics`, [`crate::metrics`]), e.g.
    /// `"127.0.0.1:9482"`; none = off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_listen: Option<String>,
}

fn is_default_capture_dir(d: &str) -> bool {
    d == DEFAULT_CAPTURE_DIR
}

impl Default for SwitchConfig {
    fn default() -> Self {
        SwitchConfig {
            buffers: DEFAULT_BUFFERS,
            control_socket: DEFAULT_CONTROL_SOCKET.to_string(),
            worker_cpu: None,
            worker_priority: None,
            mac_table_entries: DEFAULT_MAC_TABLE_ENTRIES,
            capture_dir: DEFAULT_CAPTURE_DIR.to_string(),
            metrics_listen: None,
        }
    }
}

fn default_capture_dir() -> String {
    DEFAULT_CAPTURE_DIR.to_string()
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
worker_priority = "fifo:10"

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
        assert_eq!(c.switch.worker_priority.as_deref(), Some("fifo:10"));
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
        // NAPI deferral reaches the port's config (with the busy polling it requires).
        let c = Config::from_toml(
            &port("busy_poll_us = 1\nnapi_defer_hard_irqs = 2\ngro_flush_timeout_us = 20\n"),
            "t",
        )
        .unwrap();
        let PortConfig::AfXdp(x) = &c.ports[0] else {
            panic!("expected af_xdp, got {:?}", c.ports[0]);
        };
        let b = crate::ports::af_xdp_config(x);
        assert_eq!((b.napi_defer_hard_irqs, b.gro_flush_timeout_us), (2, 20));
        assert!(b.validate().is_ok());
        assert_eq!(Config::from_toml(&c.to_toml(), "t").unwrap(), c);
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
