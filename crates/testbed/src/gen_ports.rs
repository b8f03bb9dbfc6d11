//! Opening the generator's ends of a topology as [`Port`]s.
//!
//! memif ends become [`MemifPort`]s in the role the wiring gives the generator; veth ends (and an
//! external device's `afp:` interfaces, in their namespace or the lab's own) become
//! [`AfPacketPort`]s opened inside the generator namespace (the socket stays bound to that
//! namespace, so the generator uses it from any thread), in frame mode ([`RxMode::Frame`]): block
//! mode would add up to a block timeout (~0.3–0.8 ms median measured) to every latency sample. [`wait_links_up`] drives the ports'
//! control work until every link is up — memif needs the handshake with the DUT first.

use std::time::Duration;

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};

use crate::error::{Error, Result};
use crate::topology::{MemifRole, PortEnd, Wiring};

/// Opens one end as a port named after it.
pub fn open_port(end: &PortEnd) -> Result<Box<dyn Port>> {
    match end {
        PortEnd::Memif {
            name,
            socket,
            id,
            role,
        } => {
            let role = match role {
                MemifRole::Server => Role::Server,
                MemifRole::Client => Role::Client,
            };
            let cfg = MemifConfig::new(name, &socket.display().to_string(), *id, role);
            let p = MemifPort::new(cfg).map_err(|e| Error::Port {
                port: name.clone(),
                source: Box::new(e),
            })?;
            Ok(Box::new(p))
        }
        PortEnd::Veth {
            name,
            netns,
            ifname,
            ..
        } => {
            let cfg = AfPacketConfig {
                rx_mode: RxMode::Frame,
                ..AfPacketConfig::new(name, ifname)
            };
            // An empty namespace: the lab's own (an external device's interface named without
            // `@NETNS`).
            let p = if netns.is_empty() {
                AfPacketPort::open(cfg)
            } else {
                AfPacketPort::open_in_netns(cfg, &format!("/run/netns/{netns}"))
            }
            .map_err(|e| Error::Port {
                port: format!("{name} ({ifname})"),
                source: Box::new(e),
            })?;
            Ok(Box::new(p))
        }
    }
}

/// Opens the generator's two ports of `wiring`, in order.
pub fn open_generator_ports(wiring: &Wiring) -> Result<Vec<Box<dyn Port>>> {
    wiring.gen_ports.iter().map(open_port).collect()
}

/// Calls `poll_control` on every port until all links are up, or fails after `timeout` naming
/// the ports still down.
pub fn wait_links_up(ports: &mut [Box<dyn Port>], timeout: Duration) -> Result<()> {
    let r = crate::wait_for("generator links to come up", timeout, || {
        let mut all = true;
        for p in ports.iter_mut() {
            p.poll_control();
            all &= p.link() == LinkState::Up;
        }
        all
    });
    if let Err(Error::Timeout { timeout, .. }) = r {
        let down: Vec<String> = ports
            .iter()
            .filter(|p| p.link() != LinkState::Up)
            .map(|p| format!("{} ({})", p.name(), p.describe()))
            .collect();
        return Err(Error::Timeout {
            what: format!(
                "generator links to come up; still down: {}",
                down.join(", ")
            ),
            timeout,
        });
    }
    r
}
