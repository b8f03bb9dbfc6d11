//! The `ctl` verbs of the `[[port]]` section (ports are the control plane's own section: their
//! backends are opened here, [`crate::ports`]): `port add NAME TYPE [KEY=VALUE ...]`, `port del
//! NAME`, `port up|down NAME`. Like every verb they edit a copy of the running config, which then
//! goes down the validate → diff → apply path ([`crate::sections`]). They edit the whole
//! [`Config`] because deleting a port asks what else refers to it — the users every section's
//! validation records ([`Validation::users`]), so no feature is named here.

use crate::config::{AdminState, Config, PortConfig};
use serde::Deserialize;
use vecswitch_switch::ctl::{Verb, VerbError};
use vecswitch_switch::object::{list_names, EditError, Validation};

/// The port verbs.
pub const VERBS: &[Verb<Config, VerbError>] = &[
    Verb {
        names: &["port add"],
        usage: "NAME TYPE [KEY=VALUE ...]",
        help: "adds a port (TYPE memif|af_packet|af_xdp|vhost_user; keys as in [[port]]), e.g. port add p2 memif socket=/run/m.sock id=2",
        apply: add,
    },
    Verb {
        names: &["port del", "port delete"],
        usage: "NAME",
        help: "deletes a port that nothing else in the config refers to",
        apply: del,
    },
    Verb {
        names: &["port up"],
        usage: "NAME",
        help: "sets a port admin up",
        apply: |c, w| admin(c, w, AdminState::Up),
    },
    Verb {
        names: &["port down"],
        usage: "NAME",
        help: "sets a port admin down",
        apply: |c, w| admin(c, w, AdminState::Down),
    },
];

/// A `KEY=VALUE` value as TOML: a quoted string, array or inline table as TOML; otherwise
/// integers and booleans typed, anything else a string (`socket=/run/m.sock`).
fn toml_value(v: &str) -> toml::Value {
    if v.starts_with(['"', '\'', '[', '{']) {
        if let Ok(mut t) = toml::from_str::<toml::Table>(&format!("v = {v}")) {
            if let Some(v) = t.remove("v") {
                return v;
            }
        }
    }
    if let Ok(i) = v.parse::<i64>() {
        toml::Value::Integer(i)
    } else if v == "true" || v == "false" {
        toml::Value::Boolean(v == "true")
    } else {
        toml::Value::String(v.to_string())
    }
}

/// The words of `port add` for `port` (`p2 memif socket="/run/m.sock" id=2`): what a `port_add`
/// request's `port` table becomes. Strings are quoted, so they read back as strings.
pub fn add_words(port: &PortConfig) -> Vec<String> {
    let mut words = vec![port.name().to_string(), port.type_name().to_string()];
    if let Ok(toml::Value::Table(t)) = toml::Value::try_from(port) {
        for (k, v) in t {
            if k != "name" && k != "type" {
                words.push(format!("{k}={v}"));
            }
        }
    }
    words
}

/// `port add NAME TYPE [KEY=VALUE ...]`.
fn add(c: &mut Config, w: &[String]) -> Result<(), VerbError> {
    let [name, ty, kvs @ ..] = w else {
        return Err(EditError {
            field: "arguments",
            value: w.join(" "),
            accepted: "port add NAME TYPE [KEY=VALUE ...]",
        }
        .into());
    };
    let mut t = toml::map::Map::new();
    t.insert("name".into(), toml::Value::String(name.clone()));
    t.insert("type".into(), toml::Value::String(ty.clone()));
    for kv in kvs {
        let (k, v) = kv.split_once('=').ok_or_else(|| EditError {
            field: "KEY=VALUE",
            value: kv.clone(),
            accepted: "a KEY=VALUE pair, e.g. socket=/run/m.sock",
        })?;
        if k == "name" || k == "type" {
            return Err(EditError {
                field: "KEY",
                value: k.to_string(),
                accepted: "a key other than name and type (given as NAME and TYPE already)",
            }
            .into());
        }
        t.insert(k.to_string(), toml_value(v));
    }
    let port = PortConfig::deserialize(toml::Value::Table(t)).map_err(|e| VerbError::Value {
        field: "port",
        value: w.join(" "),
        accepted: format!("a [[port]] table: {}", e.to_string().trim()),
    })?;
    c.ports.push(port);
    Ok(())
}

/// The Validation of the sections of `c`: its interfaces and what uses each.
fn validation(c: &Config) -> Validation {
    let mut v = Validation::default();
    for s in crate::sections::SECTIONS {
        (s.validate)(c, &mut v);
    }
    v
}

/// The port `name` of `c`, or why not: not an interface at all, or one another section makes.
fn port<'a>(
    c: &'a mut Config,
    name: &str,
    v: &Validation,
) -> Result<&'a mut PortConfig, VerbError> {
    let Some(i) = c.ports.iter().position(|p| p.name() == name) else {
        let ports: Vec<&str> = c.ports.iter().map(|p| p.name()).collect();
        let accepted = if v.interfaces.contains(name) {
            format!(
                "the name of a port ([[port]]; this interface is another section's); ports are: {}",
                list_names(&ports)
            )
        } else {
            format!(
                "the name of an interface (a port, a bond, a sub-interface); interfaces are: {}",
                v.interface_names()
            )
        };
        return Err(VerbError::Value {
            field: "port",
            value: name.to_string(),
            accepted,
        });
    };
    Ok(&mut c.ports[i])
}

/// `port del NAME`: refused while anything in the config refers to the port.
fn del(c: &mut Config, w: &[String]) -> Result<(), VerbError> {
    let [name] = w else {
        return Err(EditError {
            field: "arguments",
            value: w.join(" "),
            accepted: "port del NAME",
        }
        .into());
    };
    let v = validation(c);
    port(c, name, &v)?;
    if let Some(users) = v.users.get(name.as_str()).filter(|u| !u.is_empty()) {
        return Err(VerbError::InUse {
            field: "port",
            value: name.clone(),
            accepted: "a port nothing else in the config refers to",
            users: users.join("; "),
        });
    }
    c.ports.retain(|p| p.name() != name);
    Ok(())
}

/// `port up|down NAME`.
fn admin(c: &mut Config, w: &[String], state: AdminState) -> Result<(), VerbError> {
    let [name] = w else {
        return Err(EditError {
            field: "arguments",
            value: w.join(" "),
            accepted: "port up|down NAME",
        }
        .into());
    };
    let v = validation(c);
    port(c, name, &v)?.set_admin(state);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MemifMode, MemifRole};

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn added(line: &str) -> Result<PortConfig, String> {
        let mut c = Config::default();
        add(&mut c, &words(line)).map_err(|e| e.to_string())?;
        Ok(c.ports.remove(0))
    }

    /// Moved from the command-line parser's tests: `port add` reads `KEY=VALUE` pairs into a
    /// `[[port]]` table, and names what it refuses.
    #[test]
    fn port_add_key_values() {
        match added("p2 memif socket=/run/m.sock id=2 role=client mode=interrupt").unwrap() {
            PortConfig::Memif(m) => {
                assert_eq!(
                    (m.name.as_str(), m.socket.as_str(), m.id),
                    ("p2", "/run/m.sock", 2)
                );
                assert_eq!((m.role, m.mode), (MemifRole::Client, MemifMode::Interrupt));
            }
            other => panic!("{other:?}"),
        }
        let port = added("v1 af_packet interface=veth1 promiscuous=false").unwrap();
        assert_eq!(port.type_name(), "af_packet");
        assert!(added("v1 af_packet interface=veth1 colour=red")
            .unwrap_err()
            .contains("colour"));
        assert!(added("v1 tap").unwrap_err().contains("tap"));
        assert!(added("v1 memif socket").unwrap_err().contains("KEY=VALUE"));
        assert!(added("v1").unwrap_err().contains("NAME TYPE"));
        assert!(added("v1 memif name=x")
            .unwrap_err()
            .contains("NAME and TYPE"));
    }

    /// What a `port_add` request's table becomes reads back as the same port, strings that look
    /// like numbers included.
    #[test]
    fn add_words_round_trip() {
        for line in [
            r#"p2 memif socket=/run/m.sock id=2 role=client secret="1234""#,
            r#"v1 af_packet interface="1" promiscuous=false"#,
        ] {
            let p = added(line).unwrap();
            assert_eq!(added(&add_words(&p).join(" ")).unwrap(), p, "{line}");
        }
    }

    /// `port del` is refused while anything refers to the port, naming what (every section's
    /// validation records its uses); `port del|up|down` of a name that is no port names the
    /// interfaces, or says the interface is another section's.
    #[test]
    fn port_del_names_what_uses_the_port() {
        let mut c = Config::from_toml(
            r#"
[[port]]
name = "p0"
type = "af_packet"
interface = "veth0"
[[port]]
name = "p1"
type = "af_packet"
interface = "veth1"
[[port]]
name = "p2"
type = "af_packet"
interface = "veth2"
[[bridge]]
name = "br0"
ports = ["p0"]
[[mtu]]
interface = "p1"
mtu = 1500
[[bond]]
name = "lag0"
mode = "active-backup"
members = ["p2"]
"#,
            "t",
        )
        .unwrap();
        let before = c.clone();
        let del = |c: &mut Config, n: &str| del(c, &words(n)).unwrap_err().to_string();
        let e = del(&mut c, "p0");
        assert_eq!(
            e,
            "port = \"p0\": a port nothing else in the config refers to; it is a member of bridge \"br0\" (bridge[0].ports[0]): remove that first"
        );
        assert!(
            del(&mut c, "p1").contains("mtu[0].interface"),
            "{}",
            del(&mut c, "p1")
        );
        assert!(
            del(&mut c, "p2").contains("bond[0]"),
            "{}",
            del(&mut c, "p2")
        );
        let e = del(&mut c, "zz");
        assert!(e.contains("interfaces are: lag0, p0, p1, p2"), "{e}");
        let e = del(&mut c, "lag0");
        assert!(
            e.contains("another section's") && e.contains("ports are: p0, p1, p2"),
            "{e}"
        );
        assert_eq!(c, before, "refused edits changed nothing");
        admin(&mut c, &words("p0"), AdminState::Down).unwrap();
        assert_eq!(c.port("p0").map(PortConfig::admin), Some(AdminState::Down));
    }
}
