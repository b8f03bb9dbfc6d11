//! Opening the generator's ends of a topology as [`Port`]s.
//!
//! memif ends become [`MemifPort`]s in the role the wiring gives the generator (vhost-user ends,
//! in `v2v-vm`, vhost-user devices the guests attach to); veth ends (and an
//! external device's `afp:` interfaces, in their namespace or the lab's own) become, as
//! [`GenVethPort`] says, [`AfPacketPort`]s or [`AfXdpPort`]s opened inside the generator namespace
//! (the socket stays bound to that namespace, so the generator uses it from any thread).
//! AF_PACKET ports are in frame mode ([`RxMode::Frame`]): block mode would add up to a block
//! timeout (~0.3–0.8 ms median measured) to every latency sample. AF_XDP ports attach their XDP
//! program to the generator's veth end (SKB mode by default, see [`GenVethPort`]). [`wait_links_up`] drives the ports'
//! control work until every link is up — memif needs the handshake with the DUT first.

use std::time::Duration;

use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::af_xdp::{AfXdpConfig, AfXdpPort, XdpMode};
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::vhost_user;
use vecswitch_ports::{LinkState, Port};

use crate::error::{Error, Result};
use crate::topology::{MemifRole, PortEnd, Wiring};

/// How the generator opens its veth ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenVethPort {
    /// AF_PACKET, TPACKET_V2 frame mode.
    AfPacket,
    /// AF_XDP, copy mode, XDP in generic (SKB) mode: the generator's receive work stays where
    /// RPS puts it, on the generator's CPU.
    AfXdp,
    /// AF_XDP, copy mode, XDP in native (driver) mode: on veth the receive work then runs in the
    /// NAPI context of whoever sent into the pair — for frames coming back from the DUT, on the
    /// DUT's CPU, which the DUT then pays for. For calibration and comparisons only.
    AfXdpNative,
    /// AF_XDP, copy mode, native XDP, the receive NAPI **batched** (docs/BENCHMARKS.md §6.3):
    /// its hard interrupts deferred (`napi_defer_hard_irqs` [`BATCHED_DEFER_IRQS`],
    /// `gro_flush_timeout` [`BATCHED_GRO_FLUSH_US`] µs), so that the frames coming back from the
    /// device are received ~50 per NAPI run and the device's `veth_xmit` only queues them. The
    /// ports also ask for busy polling (`busy_poll_us` [`BATCHED_BUSY_POLL_US`], which the kernel
    /// requires with the deferral), but on veth it polls nothing: a veth AF_XDP socket has no
    /// NAPI id on this kernel (`show ports` prints `napi id 0`; BENCHMARKS §5, "Where vecswitch
    /// AF_XDP's cycles go"), so the port makes no busy-poll `recvfrom` and the batching is the
    /// flush timer's, which runs where the NAPI was scheduled; and a `pfifo` qdisc on each generator end, so that a full peer ring pushes
    /// back on the generator instead of dropping (veth drops with `noqueue`). Opt-in: the
    /// deferral adds up to the flush timeout to a frame's receive time, which the latency
    /// figures then include.
    AfXdpBatched,
}

/// `busy_poll_us` of [`GenVethPort::AfXdpBatched`] ports (BENCHMARKS §6.3).
pub const BATCHED_BUSY_POLL_US: u32 = 20;
/// `napi_defer_hard_irqs` of [`GenVethPort::AfXdpBatched`] ports.
pub const BATCHED_DEFER_IRQS: u32 = 2;
/// `gro_flush_timeout_us` of [`GenVethPort::AfXdpBatched`] ports.
pub const BATCHED_GRO_FLUSH_US: u32 = 200;
/// Packets of the `pfifo` qdisc on [`GenVethPort::AfXdpBatched`] ends.
pub const BATCHED_PFIFO_LIMIT: u32 = 1000;

impl GenVethPort {
    /// The environment variable that picks the type: `af_packet`, `af_xdp`, `af_xdp_native` or
    /// `af_xdp_batched`.
    pub const ENV: &'static str = "VECSWITCH_GEN_VETH_PORT";
    /// The faster one at 64 B on this lab's veth (docs/BENCHMARKS.md, "Generator ceiling over veth").
    pub const DEFAULT: GenVethPort = GenVethPort::AfXdp;

    /// [`GenVethPort::ENV`] if set, else [`GenVethPort::DEFAULT`]; a value that is neither
    /// accepted name is an error naming it.
    pub fn from_env() -> Result<GenVethPort> {
        match std::env::var(Self::ENV) {
            Err(_) => Ok(Self::DEFAULT),
            Ok(v) => v.parse(),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            GenVethPort::AfPacket => "af_packet",
            GenVethPort::AfXdp => "af_xdp",
            GenVethPort::AfXdpNative => "af_xdp_native",
            GenVethPort::AfXdpBatched => "af_xdp_batched",
        }
    }
}

impl std::str::FromStr for GenVethPort {
    type Err = Error;
    fn from_str(s: &str) -> Result<GenVethPort> {
        match s {
            "af_packet" => Ok(GenVethPort::AfPacket),
            "af_xdp" => Ok(GenVethPort::AfXdp),
            "af_xdp_native" => Ok(GenVethPort::AfXdpNative),
            "af_xdp_batched" => Ok(GenVethPort::AfXdpBatched),
            _ => Err(Error::Invalid {
                field: GenVethPort::ENV,
                value: s.to_string(),
                expected: "af_packet, af_xdp, af_xdp_native or af_xdp_batched".to_string(),
            }),
        }
    }
}

/// Opens one end as a port named after it, veth ends as [`GenVethPort::from_env`] says.
pub fn open_port(end: &PortEnd) -> Result<Box<dyn Port>> {
    open_port_as(end, GenVethPort::from_env()?)
}

/// Opens one end as a port named after it, a veth end as a `veth` port.
pub fn open_port_as(end: &PortEnd, veth: GenVethPort) -> Result<Box<dyn Port>> {
    let port_err = |name: &str, e: Box<dyn std::error::Error + Send + Sync>| Error::Port {
        port: name.to_string(),
        source: e,
    };
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
            let mut cfg = MemifConfig::new(name, &socket.display().to_string(), *id, role);
            // The ring the DUT's end of a generator link is configured with (testpmd `rsize`,
            // vecswitch `ring_size`): a memif connection uses the smaller of both ends' sizes
            // (the generator's server end offers its own as the largest), so a generator end at
            // the default 1,024 made every DUT's "4,096-slot" ring a 1,024-slot one.
            cfg.ring_size_log2 = crate::dut::testpmd::MEMIF_RING_SIZE_LOG2;
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
            // An empty namespace: the lab's own (an external device's interface named without
            // `@NETNS`).
            let ns = (!netns.is_empty()).then(|| format!("/run/netns/{netns}"));
            match veth {
                GenVethPort::AfPacket => {
                    let cfg = AfPacketConfig {
                        rx_mode: RxMode::Frame,
                        ..AfPacketConfig::new(name, ifname)
                    };
                    let p = match &ns {
                        Some(ns) => AfPacketPort::open_in_netns(cfg, ns),
                        None => AfPacketPort::open(cfg),
                    }
                    .map_err(|e| port_err(name, Box::new(e)))?;
                    Ok(Box::new(p))
                }
                GenVethPort::AfXdp | GenVethPort::AfXdpNative | GenVethPort::AfXdpBatched => {
                    let mode = if veth == GenVethPort::AfXdp {
                        XdpMode::Skb
                    } else {
                        XdpMode::Native
                    };
                    let mut cfg = AfXdpConfig {
                        mode,
                        ..AfXdpConfig::new(name, ifname)
                    };
                    if veth == GenVethPort::AfXdpBatched {
                        cfg.busy_poll_us = BATCHED_BUSY_POLL_US;
                        cfg.napi_defer_hard_irqs = BATCHED_DEFER_IRQS;
                        cfg.gro_flush_timeout_us = BATCHED_GRO_FLUSH_US;
                        let limit = BATCHED_PFIFO_LIMIT.to_string();
                        let tc = ["qdisc", "replace", "dev", ifname, "root", "pfifo", "limit"];
                        let r = if netns.is_empty() {
                            let mut a = tc.to_vec();
                            a.push(&limit);
                            crate::cmd::run("tc", &a)
                        } else {
                            let mut a = vec!["netns", "exec", netns.as_str(), "tc"];
                            a.extend(tc);
                            a.push(&limit);
                            crate::cmd::run("ip", &a)
                        };
                        r?;
                    }
                    let p = match &ns {
                        Some(ns) => AfXdpPort::open_in_netns(cfg, ns),
                        None => AfXdpPort::open(cfg),
                    }
                    .map_err(|e| port_err(name, Box::new(e)))?;
                    Ok(Box::new(p))
                }
            }
        }
        PortEnd::VhostUser { name, socket, role } => {
            let role = match role {
                MemifRole::Server => vhost_user::Role::Server,
                MemifRole::Client => vhost_user::Role::Client,
            };
            let cfg = vhost_user::VhostUserConfig::new(name, &socket.display().to_string(), role);
            let p = vhost_user::VhostUserPort::new(cfg).map_err(|e| port_err(name, Box::new(e)))?;
            Ok(Box::new(p))
        }
    }
}

/// Opens the generator's two ports of `wiring`, in order (veth ends as [`GenVethPort::from_env`]).
pub fn open_generator_ports(wiring: &Wiring) -> Result<Vec<Box<dyn Port>>> {
    open_generator_ports_as(wiring, GenVethPort::from_env()?)
}

/// Opens the generator's two ports of `wiring`, in order, veth ends as `veth` ports.
pub fn open_generator_ports_as(wiring: &Wiring, veth: GenVethPort) -> Result<Vec<Box<dyn Port>>> {
    wiring
        .gen_ports
        .iter()
        .map(|e| open_port_as(e, veth))
        .collect()
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
    // Our memif servers are up when the device's CONNECT arrives; the device's client ends one
    // message later. Poll a little longer before anything is sent, as the generator's own
    // `wait_link` does ([`vecswitch_gen::engine::LINK_SETTLE`]): a burst sent at once was lost
    // whole at testpmd's not-yet-up egress port (dut_forwarding, CI).
    if r.is_ok() {
        let until = std::time::Instant::now() + vecswitch_gen::engine::LINK_SETTLE;
        while std::time::Instant::now() < until {
            for p in ports.iter_mut() {
                p.poll_control();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gen_veth_port_parses_its_names_and_rejects_others_naming_the_setting() {
        for t in [
            GenVethPort::AfPacket,
            GenVethPort::AfXdp,
            GenVethPort::AfXdpNative,
            GenVethPort::AfXdpBatched,
        ] {
            assert_eq!(t.as_str().parse::<GenVethPort>().unwrap(), t);
        }
        let e = "afxdp".parse::<GenVethPort>().unwrap_err().to_string();
        assert!(
            e.contains(GenVethPort::ENV)
                && e.contains("afxdp")
                && e.contains("af_xdp_native or af_xdp_batched"),
            "{e}"
        );
    }
}
