//! Whole-config validation, run before anything is applied: [`validate`] checks a [`Config`] and
//! returns every problem it finds as a [`ValidationError`] that names the field path (e.g.
//! `bridge[1].static_mac[0].mac`), the value and what would be accepted. A config that passes can
//! be applied without the switch refusing it for a config reason (opening a port can still fail).

use crate::config::{AfPacketPortConfig, AfXdpPortConfig, Config, MemifRole, PortConfig};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// Longest port or bridge-domain name.
pub const MAX_NAME_LEN: usize = 64;
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
/// Accepted pool sizes.
pub const BUFFERS_RANGE: std::ops::RangeInclusive<u32> = 1024..=4_194_304;
/// Accepted MAC table sizes.
pub const MAC_TABLE_RANGE: std::ops::RangeInclusive<u32> = 1024..=(1 << 26);
/// Accepted `mac_limit` values.
pub const MAC_LIMIT_RANGE: std::ops::RangeInclusive<u32> = 1..=16_777_216;

/// One problem in a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// Where: `port[2].ring_size`, `bridge[0].static_mac[1].mac`, ...
    pub path: String,
    /// The offending value as written (strings quoted).
    pub value: String,
    /// What is wrong and what would be accepted.
    pub expected: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: {}", self.path, self.value, self.expected)
    }
}

/// Every problem found in one config (never empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl fmt::Display for ValidationErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid config ({} error{}):",
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl ValidationErrors {
    /// Whether some error is about `path`.
    pub fn has_path(&self, path: &str) -> bool {
        self.0.iter().any(|e| e.path == path)
    }
}

/// Parses `aa:bb:cc:dd:ee:ff` (hex digits, either case, `:` separated).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in out.iter_mut() {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(out)
}

/// Formats a MAC address the way `show mac` prints it.
pub fn format_mac(m: [u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

struct Errs(Vec<ValidationError>);

impl Errs {
    fn push(&mut self, path: String, value: impl fmt::Display, expected: impl Into<String>) {
        self.0.push(ValidationError {
            path,
            value: value.to_string(),
            expected: expected.into(),
        });
    }
}

fn q(s: &str) -> String {
    format!("{s:?}")
}

/// Checks a name: 1..=64 characters from `A-Z a-z 0-9 - _ . / :`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(format!("a name of 1..={MAX_NAME_LEN} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
    {
        return Err("letters, digits and - _ . / : only".to_string());
    }
    Ok(())
}

/// Validates the whole config; `Ok(())` means it can be applied.
pub fn validate(c: &Config) -> Result<(), ValidationErrors> {
    let mut e = Errs(Vec::new());
    check_switch(c, &mut e);
    let ports = check_ports(c, &mut e);
    // Which service owns each port's receive side: "xconnect[i]" or "bridge[i]".
    let mut owner: HashMap<String, String> = HashMap::new();
    check_xconnects(c, &ports, &mut owner, &mut e);
    check_bridges(c, &ports, &mut owner, &mut e);
    if e.0.is_empty() {
        Ok(())
    } else {
        Err(ValidationErrors(e.0))
    }
}

fn check_switch(c: &Config, e: &mut Errs) {
    let s = &c.switch;
    if !BUFFERS_RANGE.contains(&s.buffers) {
        e.push(
            "switch.buffers".into(),
            s.buffers,
            format!("a buffer count in {BUFFERS_RANGE:?}"),
        );
    }
    if !MAC_TABLE_RANGE.contains(&s.mac_table_entries) {
        e.push(
            "switch.mac_table_entries".into(),
            s.mac_table_entries,
            format!("an entry count in {MAC_TABLE_RANGE:?}"),
        );
    }
    if s.control_socket.is_empty()
        || s.control_socket.len() > MAX_SOCKET_PATH
        || s.control_socket.starts_with('@')
    {
        e.push(
            "switch.control_socket".into(),
            q(&s.control_socket),
            format!("a filesystem path of 1..={MAX_SOCKET_PATH} bytes"),
        );
    }
}

/// Checks every port; returns the set of valid, unique port names.
fn check_ports(c: &Config, e: &mut Errs) -> HashSet<String> {
    let mut names: HashMap<&str, usize> = HashMap::new();
    let mut memif_ids: HashMap<(&str, u32), usize> = HashMap::new();
    let mut memif_roles: HashMap<&str, (MemifRole, usize)> = HashMap::new();
    let mut ifaces: HashMap<&str, usize> = HashMap::new();
    let mut vhost_socks: HashMap<&str, usize> = HashMap::new();
    for (i, p) in c.ports.iter().enumerate() {
        // The backend's own rules for its tuning keys (name and interface are checked below).
        if let Some((field, value, accepted)) = crate::ports::check_backend(p) {
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
                    match parse_mac(mac) {
                        None => e.push(
                            format!("port[{i}].mac"),
                            q(mac),
                            "a MAC address like 02:00:00:00:00:01",
                        ),
                        Some(b) if b[0] & 1 == 1 => e.push(
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
    names.into_keys().map(str::to_string).collect()
}

fn check_port_ref(path: String, name: &str, ports: &HashSet<String>, e: &mut Errs) -> bool {
    if ports.contains(name) {
        true
    } else {
        e.push(path, q(name), "the name of a port defined in [[port]]");
        false
    }
}

fn check_xconnects(
    c: &Config,
    ports: &HashSet<String>,
    owner: &mut HashMap<String, String>,
    e: &mut Errs,
) {
    for (i, x) in c.xconnects.iter().enumerate() {
        let svc = format!("xconnect[{i}]");
        let pairs: Vec<(String, String, String)> = match (&x.ports, &x.from, &x.to) {
            (Some(p), None, None) => {
                if p.len() != 2 {
                    e.push(
                        format!("{svc}.ports"),
                        format!("{p:?}"),
                        "exactly two port names",
                    );
                    continue;
                }
                let mut v = vec![(format!("{svc}.ports[0]"), p[0].clone(), p[1].clone())];
                if x.bidirectional {
                    v.push((format!("{svc}.ports[1]"), p[1].clone(), p[0].clone()));
                }
                let ok0 = check_port_ref(format!("{svc}.ports[0]"), &p[0], ports, e);
                let ok1 = check_port_ref(format!("{svc}.ports[1]"), &p[1], ports, e);
                if !(ok0 && ok1) {
                    continue;
                }
                v
            }
            (None, Some(f), Some(t)) => {
                if !x.bidirectional {
                    e.push(
                        format!("{svc}.bidirectional"),
                        "false",
                        "only with `ports = [A, B]`; from/to is one direction already",
                    );
                }
                let okf = check_port_ref(format!("{svc}.from"), f, ports, e);
                let okt = check_port_ref(format!("{svc}.to"), t, ports, e);
                if !(okf && okt) {
                    continue;
                }
                vec![(format!("{svc}.from"), f.clone(), t.clone())]
            }
            _ => {
                e.push(
                    svc.clone(),
                    format!(
                        "{{ports: {:?}, from: {:?}, to: {:?}}}",
                        x.ports.as_deref().unwrap_or(&[]),
                        x.from.as_deref().unwrap_or(""),
                        x.to.as_deref().unwrap_or("")
                    ),
                    "either `ports = [A, B]` or both `from` and `to`",
                );
                continue;
            }
        };
        for (path, from, to) in pairs {
            if from == to {
                e.push(
                    path.clone(),
                    q(&from),
                    "two different ports (a port cannot be cross-connected to itself)",
                );
                continue;
            }
            if let Some(other) = owner.get(&from) {
                e.push(
                    path,
                    q(&from),
                    format!("a port in no other service ({other} has it already)"),
                );
            } else {
                owner.insert(from, svc.clone());
            }
        }
    }
}

fn check_bridges(
    c: &Config,
    ports: &HashSet<String>,
    owner: &mut HashMap<String, String>,
    e: &mut Errs,
) {
    let mut names: HashMap<&str, usize> = HashMap::new();
    for (i, b) in c.bridges.iter().enumerate() {
        let svc = format!("bridge[{i}]");
        if let Err(why) = check_name(&b.name) {
            e.push(format!("{svc}.name"), q(&b.name), why);
        } else if let Some(first) = names.insert(b.name.as_str(), i) {
            e.push(
                format!("{svc}.name"),
                q(&b.name),
                format!("a unique name (bridge[{first}] has it already)"),
            );
        }
        if !MAC_LIMIT_RANGE.contains(&b.mac_limit) {
            e.push(
                format!("{svc}.mac_limit"),
                b.mac_limit,
                format!("a limit in {MAC_LIMIT_RANGE:?}"),
            );
        }
        let mut members = HashSet::new();
        for (j, p) in b.ports.iter().enumerate() {
            let path = format!("{svc}.ports[{j}]");
            if !check_port_ref(path.clone(), p, ports, e) {
                continue;
            }
            if !members.insert(p.as_str()) {
                e.push(path, q(p), "each member listed once");
                continue;
            }
            if let Some(other) = owner.get(p) {
                e.push(
                    path,
                    q(p),
                    format!("a port in no other service ({other} has it already)"),
                );
            } else {
                owner.insert(p.clone(), svc.clone());
            }
        }
        let mut macs: HashMap<[u8; 6], usize> = HashMap::new();
        for (j, s) in b.static_mac.iter().enumerate() {
            let path = format!("{svc}.static_mac[{j}]");
            match parse_mac(&s.mac) {
                None => e.push(
                    format!("{path}.mac"),
                    q(&s.mac),
                    "a MAC address like 02:00:00:00:00:01",
                ),
                Some(m) if m[0] & 1 == 1 => e.push(
                    format!("{path}.mac"),
                    q(&s.mac),
                    "a unicast MAC (a static entry cannot be broadcast or multicast)",
                ),
                Some(m) => {
                    if let Some(first) = macs.insert(m, j) {
                        e.push(
                            format!("{path}.mac"),
                            q(&s.mac),
                            format!("a MAC not already static in this bridge ({svc}.static_mac[{first}] has it)"),
                        );
                    }
                }
            }
            if !members.contains(s.port.as_str()) {
                e.push(
                    format!("{path}.port"),
                    q(&s.port),
                    format!("a member port of bridge {:?}", b.name),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BridgeConfig, StaticMacConfig, XconnectConfig};

    fn base() -> Config {
        Config::from_toml(
            r#"
[[port]]
name = "p0"
type = "memif"
socket = "/tmp/m.sock"
id = 0
[[port]]
name = "p1"
type = "memif"
socket = "/tmp/m.sock"
id = 1
[[port]]
name = "v0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "v1"
type = "af_packet"
interface = "veth1"
[[xconnect]]
ports = ["p0", "p1"]
[[bridge]]
name = "br0"
ports = ["v0", "v1"]
  [[bridge.static_mac]]
  mac = "02:00:00:00:00:01"
  port = "v0"
"#,
            "t",
        )
        .unwrap()
    }

    /// Validates and returns the errors, failing the test if the config is valid.
    fn errs(c: &Config) -> ValidationErrors {
        validate(c).expect_err("config should be invalid")
    }

    fn memif(c: &mut Config, i: usize) -> &mut crate::config::MemifPortConfig {
        match &mut c.ports[i] {
            PortConfig::Memif(m) => m,
            _ => panic!("port {i} is not memif"),
        }
    }

    #[test]
    fn base_config_is_valid() {
        validate(&base()).unwrap();
        validate(&Config::default()).unwrap();
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("02:00:0A:bb:cc:ff"),
            Some([2, 0, 0x0a, 0xbb, 0xcc, 0xff])
        );
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "2:00:00:00:00:00",
            "zz:00:00:00:00:00",
            "02-00-00-00-00-00",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
        assert_eq!(
            format_mac([2, 0, 0x0a, 0xbb, 0xcc, 0xff]),
            "02:00:0a:bb:cc:ff"
        );
    }

    #[test]
    fn duplicate_port_name_names_the_first() {
        let mut c = base();
        memif(&mut c, 1).name = "p0".into();
        let e = errs(&c);
        assert!(e.has_path("port[1].name"), "{e}");
        assert!(e.to_string().contains("port[0] has it already"), "{e}");
    }

    #[test]
    fn bad_names() {
        let mut c = base();
        memif(&mut c, 0).name = "".into();
        c.bridges[0].name = "br 0".into();
        let e = errs(&c);
        assert!(e.has_path("port[0].name"), "{e}");
        assert!(e.has_path("bridge[0].name"), "{e}");
    }

    #[test]
    fn duplicate_bridge_name() {
        let mut c = base();
        c.bridges.push(BridgeConfig::new("br0"));
        assert!(errs(&c).has_path("bridge[1].name"));
    }

    #[test]
    fn ring_size_must_be_power_of_two_in_range() {
        for bad in [0, 100, 128, 1000, 32768] {
            let mut c = base();
            memif(&mut c, 0).ring_size = bad;
            let e = errs(&c);
            assert_eq!(e.0.len(), 1, "{e}");
            assert_eq!(e.0[0].path, "port[0].ring_size");
            assert_eq!(e.0[0].value, bad.to_string());
            assert!(e.0[0].expected.contains("power of two in 256..=16384"));
        }
        for good in [256, 512, 16384] {
            let mut c = base();
            memif(&mut c, 0).ring_size = good;
            validate(&c).unwrap();
        }
    }

    #[test]
    fn memif_field_limits() {
        let mut c = base();
        memif(&mut c, 0).buffer_size = 64;
        memif(&mut c, 0).secret = Some("x".repeat(25));
        memif(&mut c, 1).socket = String::new();
        let e = errs(&c);
        assert!(e.has_path("port[0].buffer_size"), "{e}");
        assert!(e.has_path("port[0].secret"), "{e}");
        assert!(e.has_path("port[1].socket"), "{e}");
    }

    #[test]
    fn bad_and_multicast_port_mac() {
        let mut c = base();
        memif(&mut c, 0).mac = Some("02:00:00:00:00".into());
        memif(&mut c, 1).mac = Some("01:00:5e:00:00:01".into());
        let e = errs(&c);
        assert!(
            e.has_path("port[0].mac") && e.has_path("port[1].mac"),
            "{e}"
        );
    }

    #[test]
    fn memif_id_reused_on_one_socket_and_mixed_roles() {
        let mut c = base();
        memif(&mut c, 1).id = 0;
        let e = errs(&c);
        assert!(e.has_path("port[1].id"), "{e}");
        let mut c = base();
        memif(&mut c, 1).role = MemifRole::Client;
        let e = errs(&c);
        assert!(e.has_path("port[1].role"), "{e}");
    }

    #[test]
    fn af_packet_interface_checks() {
        let mut c = base();
        if let PortConfig::AfPacket(a) = &mut c.ports[3] {
            a.interface = "veth0".into();
        }
        assert!(errs(&c).has_path("port[3].interface"));
        if let PortConfig::AfPacket(a) = &mut c.ports[3] {
            a.interface = "a-very-long-interface-name".into();
        }
        assert!(errs(&c).has_path("port[3].interface"));
    }

    #[test]
    fn af_xdp_checks_name_the_field_value_and_accepted() {
        let mut c = base();
        let mut x = AfXdpPortConfig::new("x0", "vethx");
        x.rx_size = Some(1000);
        c.ports.push(PortConfig::AfXdp(x.clone()));
        let e = errs(&c);
        assert!(e.has_path("port[4].rx_size"), "{e}");
        assert!(e.to_string().contains("1000"), "{e}");
        assert!(e.to_string().contains("power of two"), "{e}");
        x.rx_size = None;
        x.queue = Some(300);
        c.ports[4] = PortConfig::AfXdp(x);
        let e = errs(&c);
        assert!(e.has_path("port[4].queue"), "{e}");
        assert!(e.to_string().contains("0 to 255"), "{e}");
        // One interface, one port, whatever the backend.
        let mut c = base();
        let iface = match &c.ports[3] {
            PortConfig::AfPacket(a) => a.interface.clone(),
            other => panic!("expected af_packet, got {other:?}"),
        };
        c.ports
            .push(PortConfig::AfXdp(AfXdpPortConfig::new("x0", &iface)));
        assert!(errs(&c).has_path("port[4].interface"));
    }

    #[test]
    fn vhost_user_port_checks() {
        let vhost = |socket: &str, socket2: &str, role: &str| {
            Config::from_toml(
                &format!(
                    "[[port]]\nname = \"vh0\"\ntype = \"vhost_user\"\nsocket = \"{socket}\"\n\
                     role = \"{role}\"\n[[port]]\nname = \"vh1\"\ntype = \"vhost_user\"\n\
                     socket = \"{socket2}\"\n"
                ),
                "test",
            )
        };
        let c = vhost("/tmp/a.sock", "/tmp/b.sock", "client").unwrap();
        validate(&c).unwrap();
        assert_eq!(c.ports[0].type_name(), "vhost_user");
        let e = errs(&vhost("/tmp/a.sock", "/tmp/a.sock", "server").unwrap());
        assert!(e.has_path("port[1].socket"), "{e}");
        let e = errs(&vhost("@abstract", "/tmp/b.sock", "server").unwrap());
        assert!(e.has_path("port[0].socket"), "{e}");
        assert!(e.to_string().contains("abstract"), "{e}");
        let e = vhost("/tmp/a.sock", "/tmp/b.sock", "frontend").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("frontend") && msg.contains("server"), "{msg}");
    }

    #[test]
    fn unknown_port_references() {
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into(), "nope".into()]);
        c.bridges[0].ports.push("ghost".into());
        let e = errs(&c);
        assert!(e.has_path("xconnect[0].ports[1]"), "{e}");
        assert!(e.has_path("bridge[0].ports[2]"), "{e}");
        assert!(e.to_string().contains("\"ghost\""), "{e}");
    }

    #[test]
    fn port_in_two_services() {
        let mut c = base();
        c.bridges[0].ports.push("p0".into());
        let e = errs(&c);
        assert_eq!(e.0.len(), 1, "{e}");
        assert_eq!(e.0[0].path, "bridge[0].ports[2]");
        assert!(e.0[0].expected.contains("xconnect[0]"), "{e}");
        let mut c = base();
        c.bridges.push(BridgeConfig {
            ports: vec!["v1".into()],
            ..BridgeConfig::new("br1")
        });
        assert!(errs(&c).has_path("bridge[1].ports[0]"));
        let mut c = base();
        c.xconnects.push(XconnectConfig::one_way("p0", "v0"));
        assert!(errs(&c).has_path("xconnect[1].from"));
    }

    #[test]
    fn two_one_way_xconnects_make_an_eline() {
        let mut c = base();
        c.xconnects = vec![
            XconnectConfig::one_way("p0", "p1"),
            XconnectConfig::one_way("p1", "p0"),
        ];
        validate(&c).unwrap();
    }

    #[test]
    fn malformed_xconnects() {
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into()]);
        assert!(errs(&c).has_path("xconnect[0].ports"));
        let mut c = base();
        c.xconnects[0].from = Some("p0".into());
        assert!(errs(&c).has_path("xconnect[0]"));
        let mut c = base();
        c.xconnects[0] = XconnectConfig {
            ports: None,
            bidirectional: true,
            from: Some("p0".into()),
            to: None,
        };
        assert!(errs(&c).has_path("xconnect[0]"));
        let mut c = base();
        c.xconnects[0].ports = Some(vec!["p0".into(), "p0".into()]);
        assert!(errs(&c).has_path("xconnect[0].ports[0]"));
        let mut c = base();
        c.xconnects[0] = XconnectConfig::one_way("p0", "p1");
        c.xconnects[0].bidirectional = false;
        assert!(errs(&c).has_path("xconnect[0].bidirectional"));
    }

    #[test]
    fn duplicate_member() {
        let mut c = base();
        c.bridges[0].ports.push("v0".into());
        assert!(errs(&c).has_path("bridge[0].ports[2]"));
    }

    #[test]
    fn static_mac_errors() {
        let mut c = base();
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:0g".into(),
            port: "v0".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "ff:ff:ff:ff:ff:ff".into(),
            port: "v0".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:01".into(),
            port: "v1".into(),
        });
        c.bridges[0].static_mac.push(StaticMacConfig {
            mac: "02:00:00:00:00:05".into(),
            port: "p0".into(),
        });
        let e = errs(&c);
        assert!(e.has_path("bridge[0].static_mac[1].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[2].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[3].mac"), "{e}");
        assert!(e.has_path("bridge[0].static_mac[4].port"), "{e}");
        assert_eq!(e.0.len(), 4, "{e}");
    }

    #[test]
    fn switch_section_limits() {
        let mut c = base();
        c.switch.buffers = 10;
        c.switch.control_socket = String::new();
        let e = errs(&c);
        assert!(
            e.has_path("switch.buffers") && e.has_path("switch.control_socket"),
            "{e}"
        );
    }

    #[test]
    fn mac_limit_zero() {
        let mut c = base();
        c.bridges[0].mac_limit = 0;
        assert!(errs(&c).has_path("bridge[0].mac_limit"));
    }

    #[test]
    fn every_error_is_reported_at_once() {
        let mut c = base();
        memif(&mut c, 0).ring_size = 3;
        c.bridges[0].static_mac[0].mac = "x".into();
        let e = errs(&c);
        assert_eq!(e.0.len(), 2);
        let s = e.to_string();
        assert!(s.starts_with("invalid config (2 errors)"), "{s}");
        assert!(s.contains("port[0].ring_size = 3"), "{s}");
        assert!(s.contains("bridge[0].static_mac[0].mac = \"x\""), "{s}");
    }
}
