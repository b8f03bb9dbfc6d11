//! [`SwitchError`]: every way a control call on the switch can fail. Each message names what was
//! wrong, the value given and what would have been accepted. A call that fails changes nothing.

/// A control call that could not be carried out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwitchError {
    #[error("no port named `{name}`; ports are: {known}")]
    NoPort { name: String, known: String },
    #[error("a port named `{name}` already exists")]
    PortExists { name: String },
    #[error("no bridge named `{name}`; bridges are: {known}")]
    NoBridge { name: String, known: String },
    #[error("a bridge named `{name}` already exists")]
    BridgeExists { name: String },
    #[error("invalid {what} name {name:?}: accepted 1-64 characters, no whitespace or control characters")]
    InvalidName { what: &'static str, name: String },
    #[error("port `{port}` already has a service ({service}); remove it first")]
    PortHasService { port: String, service: String },
    #[error("port `{port}` is not a member of bridge `{bridge}`; its members are: {members}")]
    NotMember {
        port: String,
        bridge: String,
        members: String,
    },
    #[error("port `{port}` has no xconnect (its service is {service})")]
    NotXconnect { port: String, service: String },
    #[error("cannot forward the xconnect of port `{port}` in the kernel: {reason}")]
    Offload { port: String, reason: String },
    #[error("cannot cross-connect port `{port}` to itself: accepted two different ports")]
    XconnectToSelf { port: String },
    #[error("port `{port}` is still used by {users}; remove those first")]
    PortInUse { port: String, users: String },
    #[error("invalid MAC address {mac} for a static entry: accepted a unicast address (the I/G bit of the first byte clear)")]
    GroupMac { mac: String },
    #[error("bridge `{bridge}` has no static entry for {mac}")]
    NoStaticMac { bridge: String, mac: String },
    #[error("the MAC table is full ({max_entries} entries); accepted: remove entries or start the switch with a larger `mac_table_entries`")]
    MacTableFull { max_entries: usize },
    #[error("too many {what}: at most {max}")]
    TooMany { what: &'static str, max: usize },
    #[error("invalid {field} {value}: accepted {accepted}")]
    InvalidValue {
        field: &'static str,
        value: String,
        accepted: &'static str,
    },
    #[error("feature arc change refused: {reason}")]
    Feature { reason: String },
    #[error("port `{port}` has no capture running")]
    NoCapture { port: String },
    #[error("capture on port `{port}` failed: {reason}")]
    Capture { port: String, reason: String },
}

/// Joins names for error messages (`a, b`), or `(none)`.
pub(crate) fn list(names: &[String]) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}
