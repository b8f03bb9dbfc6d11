//! The LAG case of seed 001 (issue 9 item 6: "two 2-port groups, E-Line between them"): topology
//! `phy2phy-lag`, the tester's side of the link aggregation ([`Partner`]) and what the results
//! record about the members ([`LagReport`]).
//!
//! ```text
//!  generator (CPU g)      netns <run>-gen: the tester's LAG (CPU g)            netns <run>-dut: DUT (CPU d)
//!  gen0 ═ memif phy0.sock ═ phy0 ⇄ xconnect ⇄ bond lagA ├─ pm0 ══ veth ══ dut0 ─┐ DUT group A
//!                                                       └─ pm1 ══ veth ══ dut1 ─┘      ⇅ E-Line
//!  gen1 ═ memif phy1.sock ═ phy1 ⇄ xconnect ⇄ bond lagB ├─ pm2 ══ veth ══ dut2 ─┐ DUT group B
//!                                                       └─ pm3 ══ veth ══ dut3 ─┘
//! ```
//!
//! The generator keeps its two ports; behind each sits a two-member LACP group (IEEE 802.1AX-2014,
//! fast rate, hash `l34`) held by the **partner**: a `vecswitch run` process in the generator's
//! namespace, on the generator's CPU, whose two bonds are cross-connected to the generator's memif
//! links. The DUT holds the four member veth ends (`dut0`, `dut1` toward group A, `dut2`, `dut3`
//! toward group B), bonds each pair with LACP and connects the two bonds (`vecswitch-lag`,
//! `ovs-lag`: [`crate::dut::lag`]).
//!
//! Why this topology (the cheapest honest one on this host):
//! - the kernel's bonding driver (mode 802.3ad) would be the neutral partner, but this lab's
//!   kernel has none (`ip link add type bond` → "Unknown device type"; no `team` either; no
//!   modules to load), so the partner is vecswitch's own bond, whose LACP is tested against the
//!   Linux bonding driver in a QEMU guest and Open vSwitch's (crates/testbed/tests/lacp_guest.rs,
//!   crates/switch/tests/bond_ovs.rs).
//!   Against OVS as DUT the two sides are different implementations; against vecswitch both are
//!   vecswitch's.
//! - a 4-port generator would need LACP in the generator; the partner reuses what exists.
//! - memif between the generator and the partner: the cheapest link here, so the veth work is on
//!   the member links only.
//!
//! The price: the partner shares the generator's CPU (2 cores: one for the DUT, one for the
//! tester), so the tester's ceiling on this topology is the generator's and the partner's
//! together, lower than the memif calibration says. The placement record lists the partner
//! (role `lag-partner`); its drops are in the [`LagReport`] of every result, so a loss it caused
//! is never read as the DUT's without the record saying so.
//!
//! LACP must be up before the first trial: [`Testbed::start`](crate::Testbed::start) waits
//! (bounded, [`CONVERGE_TIMEOUT`]) until on every member the partner is collecting and
//! distributing and the DUT's LACPDUs say it is in sync, collecting and distributing
//! ([`converged`]); otherwise it fails naming the member and both states.
//!
//! The generator's traffic is spread over [`LAG_FLOWS`] UDP source ports ([`spread_flows`]), so
//! both sides' hashes use both members; the [`LagReport`] counts the frames each member carried
//! in each direction from the kernel's counters of the partner's veth ends.
//!
//! **Failover** (the lab's `failover` procedure, [`vecswitch_lab::procedures::failover`]): the
//! [`GenMeasurer`] of a `phy2phy-lag` testbed is its [`LinkFailover`]. A thread beside the trial
//! takes the tester's end of a member link down (`ip -n <run>-gen link set pm<i> down`: the
//! partner's port loses its link, the device's `dut<i>` its carrier) and optionally up again at
//! the given offsets, reading all four members' counters at once ([`read_members`]) right before
//! each event; the partner's drops and LACP state are read before and after the trial. Afterwards
//! every member is brought up and the call waits until LACP converged again, so the tests after it
//! find the groups whole.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use vecswitch_gen::{Field, FieldMode, FieldRange, StreamSpec};
use vecswitch_lab::procedures::failover::{EventTrial, LinkEvent, LinkFailover, MemberFrames};
use vecswitch_lab::{LabError, Load, Measurer};

use vecswitch_control::config::{Config, XconnectConfig};
use vecswitch_switch::bond::config::BondConfig;
use vecswitch_switch::bond::control::LacpMemberInfo;
use vecswitch_switch::bond::lacp::{LacpRate, MuxState};
use vecswitch_switch::bond::{BondMode, HashPolicy};

use crate::dut::vecswitch::{config, parse_internal_drops, parse_ports, wait_ready, Mode};
use crate::error::{Error, Result};
use crate::measurer::GenMeasurer;
use crate::netns::{veth_pair, Netns};
use crate::placement::{CorePlan, PlacedProcess};
use crate::process::{ChildGuard, ProcessSpec};
use crate::rundir::RunDir;
use crate::topology::{MemifRole, PortEnd, Testbed, Wiring};

/// Members per group.
pub const MEMBERS: usize = 2;
/// The groups: behind generator port 0 and port 1.
pub const GROUPS: [&str; 2] = ["A", "B"];
/// The partner's bonds, one per group.
pub const PARTNER_BONDS: [&str; 2] = ["lagA", "lagB"];
/// Distinct UDP source ports of the generator's streams on a LAG ([`spread_flows`]).
pub const LAG_FLOWS: u32 = 64;
/// The longest wait for LACP to converge after the DUT is set up: fast LACPDUs every second,
/// a few exchanges, on a loaded host.
pub const CONVERGE_TIMEOUT: Duration = Duration::from_secs(30);

/// The partner's veth end of member `i` (group `i / MEMBERS`).
pub fn partner_end(i: usize) -> String {
    format!("pm{i}")
}

/// The DUT's veth end of member `i` (group `i / MEMBERS`).
pub fn dut_end(i: usize) -> String {
    format!("dut{i}")
}

/// Builds the links of `phy2phy-lag` (module doc): the generator namespace `<id>-gen`, the four
/// member veth pairs (RPS: the partner's ends on the generator's CPU, the DUT's on the DUT's)
/// and the generator's two memif servers. Returns the namespace, the generator's ends and the
/// DUT's four ends.
pub(crate) fn build(
    id: &str,
    run_dir: &RunDir,
    dut_ns: &Netns,
    cores: CorePlan,
) -> Result<(Netns, Vec<PortEnd>, Vec<PortEnd>)> {
    let ns = Netns::create(&format!("{id}-gen"))?;
    let mut dut_ports = Vec::new();
    for i in 0..GROUPS.len() * MEMBERS {
        let (p, d) = (partner_end(i), dut_end(i));
        veth_pair(&ns, &p, dut_ns, &d)?;
        ns.link_up(&p)?;
        dut_ns.link_up(&d)?;
        for (n, ifname, cpu) in [(&ns, &p, cores.generator), (dut_ns, &d, cores.dut)] {
            if let Err(e) = n.set_rps(ifname, CorePlan::mask(cpu)) {
                tracing::warn!("RPS not set on {ifname}: {e}");
            }
        }
        dut_ports.push(PortEnd::Veth {
            name: d.clone(),
            netns: dut_ns.name().to_string(),
            mac: dut_ns.mac(&d)?,
            ifname: d,
        });
    }
    for i in 0..GROUPS.len() * MEMBERS {
        let (p, d) = (partner_end(i), dut_end(i));
        crate::wait_for(
            &format!("veth {p}/{d} carrier"),
            Duration::from_secs(5),
            || ns.oper_up(&p) && dut_ns.oper_up(&d),
        )?;
    }
    let gen_ports = (0..GROUPS.len())
        .map(|i| PortEnd::Memif {
            name: format!("gen{i}"),
            socket: run_dir.file(&format!("phy{i}.sock")),
            id: 0,
            role: MemifRole::Server,
        })
        .collect();
    Ok((ns, gen_ports, dut_ports))
}

/// The DUT's member port names per group (`[[dut0, dut1], [dut2, dut3]]`), or why `w` is not a
/// `phy2phy-lag` wiring (for the LAG drivers).
pub fn dut_groups(dut: &str, w: &Wiring) -> Result<[[String; MEMBERS]; 2]> {
    if !matches!(w.topology, crate::Topology::Phy2PhyLag { .. })
        || w.dut_ports.len() != GROUPS.len() * MEMBERS
    {
        return Err(crate::dut::unsupported_wiring(
            dut,
            w,
            "a LAG driver bonds the four member links of topology phy2phy-lag",
        ));
    }
    let name = |i: usize| w.dut_ports[i].name().to_string();
    Ok([[name(0), name(1)], [name(2), name(3)]])
}

/// Spreads every stream over [`LAG_FLOWS`] UDP source ports (one flow each), so that a hash on
/// L3/L4 (the partner's `l34`, the DUT's) puts the flows on both members of a group.
pub fn spread_flows(streams: &mut [StreamSpec]) {
    for s in streams {
        s.ranges.retain(|r| r.field != Field::SrcPort);
        s.ranges.push(FieldRange {
            field: Field::SrcPort,
            count: LAG_FLOWS,
            mode: FieldMode::Increment,
        });
        s.flows = s.flows.max(LAG_FLOWS);
    }
}

/// A LACP bond `name` over `members`: LACP fast, hash `l34` (the partner's and `vecswitch-lag`'s).
pub fn lacp_bond(name: &str, members: Vec<String>) -> BondConfig {
    BondConfig {
        name: name.to_string(),
        mode: BondMode::Lacp,
        hash: HashPolicy::L34,
        lacp_rate: LacpRate::Fast,
        members,
    }
}

/// [`partner_config`] as the TOML text `vecswitch run` reads.
pub fn partner_toml(gen_ports: &[PortEnd], netns: &str, ctl: &Path, cpu: usize) -> String {
    format!(
        "# written by vecswitch-testbed: the tester's LAG partner (phy2phy-lag)\n{}",
        partner_config(gen_ports, netns, ctl, cpu).to_toml()
    )
}

/// The partner's `vecswitch run` config: the generator's memif links as clients `phy0`, `phy1`,
/// the four member ends as AF_PACKET ports, bonds `lagA`/`lagB` ([`lacp_bond`]) and an E-Line
/// from each memif link to its bond.
pub fn partner_config(gen_ports: &[PortEnd], netns: &str, ctl: &Path, cpu: usize) -> Config {
    let mut ports: Vec<PortEnd> = gen_ports
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            PortEnd::Memif { socket, id, .. } => Some(PortEnd::Memif {
                name: format!("phy{i}"),
                socket: socket.clone(),
                id: *id,
                role: MemifRole::Client,
            }),
            _ => None,
        })
        .collect();
    for i in 0..GROUPS.len() * MEMBERS {
        ports.push(PortEnd::Veth {
            name: partner_end(i),
            netns: netns.to_string(),
            ifname: partner_end(i),
            mac: String::new(),
        });
    }
    let mut c = config(&ports, &[], Mode::Xconnect, ctl, Some(cpu));
    for (g, bond) in PARTNER_BONDS.iter().enumerate() {
        let members = (0..MEMBERS).map(|m| partner_end(g * MEMBERS + m)).collect();
        c.bonds.push(lacp_bond(bond, members));
        c.xconnects
            .push(XconnectConfig::both(&format!("phy{g}"), bond));
    }
    c
}

/// Why LACP has not converged, as [`converged`] reads the partner's `show lacp` answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotConverged {
    /// The answer is not a list of the switch's `LacpMemberInfo`.
    #[error("unreadable `show lacp` answer: {0}")]
    Unreadable(String),
    /// The partner lists another number of members than the topology has.
    #[error("the partner lists {listed} LACP members, expected {expected}")]
    Members { listed: usize, expected: usize },
    /// The first member that is not collecting and distributing on both sides.
    #[error("{0}")]
    Member(Box<MemberNotReady>),
}

/// A LACP member not collecting and distributing on both sides, with both states in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "member {member} (tester) ↔ {dut} (DUT) of bond {bond}: tester mux {mux}, receive \
     machine {rx}; the DUT (system {system}) says [{flags}]{hint}"
)]
pub struct MemberNotReady {
    /// The tester's member port (`pm0` …).
    pub member: String,
    /// The DUT's end of that link (`dut0` …, `?` when the member name is not `pmN`).
    pub dut: String,
    /// The tester's bond the member is in.
    pub bond: String,
    /// The tester's mux state (802.1AX §6.4.15), as the switch names it.
    pub mux: String,
    /// The tester's receive machine state (§6.4.12).
    pub rx: String,
    /// The DUT's system id from its last LACPDU (all zeros: none came).
    pub system: String,
    /// The DUT's state flags from its last LACPDU, space-separated.
    pub flags: String,
    /// Why the DUT may be silent (no LACPDU from it at all), or empty.
    pub hint: &'static str,
}

/// Whether the partner's `ctl --json show lacp` answer says LACP converged on every member: the
/// partner's mux is collecting-distributing (IEEE 802.1AX-2014 §6.4.15) and the DUT's last
/// LACPDU (the partner's "partner" state, §6.4.2.3) says in sync, collecting and distributing.
/// `Err`: the first member that is not there, with both states ([`NotConverged`]).
pub fn converged(lacp_json: &str) -> std::result::Result<(), NotConverged> {
    let list: Vec<LacpMemberInfo> = crate::dut::vecswitch::answer_data(lacp_json)
        .ok_or_else(|| NotConverged::Unreadable(lacp_json.to_string()))?;
    let want = GROUPS.len() * MEMBERS;
    if list.len() != want {
        return Err(NotConverged::Members {
            listed: list.len(),
            expected: want,
        });
    }
    for m in &list {
        let dut = &m.partner.flags;
        let dut_ok = ["synchronization", "collecting", "distributing"]
            .iter()
            .all(|f| dut.iter().any(|x| x == f));
        if m.mux_state != MuxState::CollectingDistributing || !dut_ok {
            let member = &m.member;
            let i = member
                .strip_prefix("pm")
                .and_then(|n| n.parse::<usize>().ok());
            let system = &m.partner.system;
            return Err(NotConverged::Member(Box::new(MemberNotReady {
                member: member.clone(),
                dut: i.map(dut_end).unwrap_or_else(|| "?".into()),
                bond: m.bond.clone(),
                mux: serde_name(&m.mux_state),
                rx: serde_name(&m.rx_state),
                system: system.clone(),
                flags: dut.join(" "),
                hint: if system == "00:00:00:00:00:00" {
                    " — no LACPDU from the DUT: does it run a LAG driver (vecswitch-lag, ovs-lag)?"
                } else {
                    ""
                },
            })));
        }
    }
    Ok(())
}

/// A state as `show lacp` writes it (`collecting-distributing`).
fn serde_name<T: Serialize>(t: &T) -> String {
    match serde_json::to_value(t) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "?".into(),
    }
}

/// The tester's LAG: `vecswitch run` with [`partner_toml`] in the generator's namespace.
#[derive(Debug)]
pub struct Partner {
    bin: PathBuf,
    ctl: PathBuf,
    netns: String,
    child: ChildGuard,
}

impl Partner {
    /// Starts the partner on `w` (the generator's memif servers must listen) with `bin`
    /// (empty: the running executable, as `vecswitch bench` runs) and waits until it reports its
    /// ports, the member links up.
    pub fn start(w: &Wiring, bin: &Path) -> Result<Partner> {
        let bin = crate::chain::vecswitch_bin(bin)?;
        let netns = w.gen_netns.clone().ok_or_else(|| Error::Invalid {
            field: "phy2phy-lag wiring",
            value: "no generator namespace".into(),
            expected: "the namespace of the tester's member links (Testbed::build)".into(),
        })?;
        let ctl = w.run_dir.join("lag-partner.ctl");
        let toml = partner_toml(&w.gen_ports, &netns, &ctl, w.cores.generator);
        let path = w.run_dir.join("lag-partner.toml");
        std::fs::write(&path, &toml).map_err(|source| Error::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        // SCHED_OTHER: the partner shares the generator's CPU (module doc).
        let spec = ProcessSpec::new("lag-partner", &bin.display().to_string())
            .args([
                "run".to_string(),
                "--config".into(),
                path.display().to_string(),
                "--worker-priority".into(),
                "other".into(),
            ])
            .netns(Some(&netns))
            .cpus(Some(vec![w.cores.generator]));
        let mut child = ChildGuard::spawn(&spec, &w.run_dir)?;
        let veths: Vec<PortEnd> = (0..GROUPS.len() * MEMBERS)
            .map(|i| PortEnd::Veth {
                name: partner_end(i),
                netns: netns.clone(),
                ifname: partner_end(i),
                mac: String::new(),
            })
            .collect();
        wait_ready(&bin, &mut child, &ctl, &veths)?;
        Ok(Partner {
            bin,
            ctl,
            netns,
            child,
        })
    }

    /// `vecswitch ctl --json show <what>` on the partner.
    pub fn show(&self, what: &str) -> Result<String> {
        ctl_show(&self.bin, &self.ctl, what)
    }

    /// Waits until LACP converged on every member ([`converged`]), or fails after `timeout`
    /// naming the member and the states of both sides.
    pub fn wait_converged(&mut self, timeout: Duration) -> Result<()> {
        let mut last = String::from("no answer from the partner yet");
        let (bin, ctl, child) = (&self.bin, &self.ctl, &mut self.child);
        let r = crate::cmd::wait_for_result("LACP to converge", timeout, || {
            child.check_alive()?;
            match ctl_show(bin, ctl, "lacp") {
                Ok(json) => match converged(&json) {
                    Ok(()) => Ok(true),
                    Err(why) => {
                        last = why.to_string();
                        Ok(false)
                    }
                },
                Err(e) => {
                    last = e.to_string();
                    Ok(false)
                }
            }
        });
        match r {
            Err(Error::Timeout { timeout, .. }) => Err(Error::Timeout {
                what: format!(
                    "LACP between the tester's LAG and the DUT to converge (every member \
                     collecting and distributing on both sides); {last}"
                ),
                timeout,
            }),
            r => r,
        }
    }

    pub fn check_alive(&mut self) -> Result<()> {
        self.child.check_alive()
    }

    /// The placement record of the partner (role `lag-partner`).
    pub fn placed(&self) -> PlacedProcess {
        PlacedProcess {
            role: "lag-partner".into(),
            name: self.child.name().to_string(),
            pid: self.child.pid(),
            cpus: self.child.cpus_allowed(),
            note: "the tester's LACP groups (phy2phy-lag), on the generator's CPU".into(),
        }
    }

    /// What the members carried and the partner dropped, and the LACP state now.
    pub fn report(&self) -> Result<LagReport> {
        let members = read_members(&self.netns)?;
        let ports = self.show("ports")?;
        let errors = self.show("errors")?;
        let lacp = self.show("lacp")?;
        let unreadable = |what: &str, a: &str| Error::Invalid {
            field: "lag partner ctl answer",
            value: format!("show {what}: {}", a.chars().take(200).collect::<String>()),
            expected: "the JSON of `vecswitch ctl --json show ports|errors`".into(),
        };
        let p = parse_ports(&ports).ok_or_else(|| unreadable("ports", &ports))?;
        let internal =
            parse_internal_drops(&errors).ok_or_else(|| unreadable("errors", &errors))?;
        Ok(LagReport {
            members,
            partner_rx_dropped: p.iter().map(|(_, c)| c.rx_dropped).sum(),
            partner_tx_dropped: p.iter().map(|(_, c)| c.tx_dropped).sum(),
            partner_internal_dropped: internal,
            partner_errors: error_lines(&errors),
            lacp: match converged(&lacp) {
                Ok(()) => {
                    "converged: every member collecting and distributing on both sides".into()
                }
                Err(why) => why.to_string(),
            },
        })
    }

    /// Stops the partner process.
    pub fn stop(&mut self) {
        self.child.stop(Duration::from_secs(2));
    }
}

/// `vecswitch ctl --json show <what>` on the switch serving `ctl`.
pub(crate) fn ctl_show(bin: &Path, ctl: &Path, what: &str) -> Result<String> {
    crate::cmd::run(
        &bin.display().to_string(),
        &[
            "ctl",
            "--socket",
            &ctl.display().to_string(),
            "--json",
            "--timeout",
            "5",
            "show",
            what,
        ],
    )
}

/// `node reason: count` for each entry of a `ctl --json show errors` answer.
pub fn error_lines(json: &str) -> Vec<String> {
    crate::dut::vecswitch::answer_data::<Vec<vecswitch_graph::ErrorCount>>(json)
        .unwrap_or_default()
        .into_iter()
        .map(|e| format!("{} {}: {}", e.node, e.reason, e.count))
        .collect()
}

/// `(rx_packets, tx_packets)` from `ip -s -j link show dev IF`.
pub fn parse_link_stats(json: &str) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    link_stats(v.get(0)?)
}

fn link_stats(link: &serde_json::Value) -> Option<(u64, u64)> {
    let s = link.get("stats64")?;
    let n = |dir: &str| s.get(dir)?.get("packets")?.as_u64();
    Some((n("rx")?, n("tx")?))
}

/// The members' counters from `ip -s -j link show` of the whole namespace (one reading for all
/// four: the same instant for each), in member order; `None` when one is missing.
pub fn parse_members(json: &str) -> Option<Vec<MemberLoad>> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let links = v.as_array()?;
    (0..GROUPS.len() * MEMBERS)
        .map(|i| {
            let p = partner_end(i);
            let l = links
                .iter()
                .find(|l| l.get("ifname").and_then(|n| n.as_str()) == Some(p.as_str()))?;
            let (rx, tx) = link_stats(l)?;
            Some(MemberLoad {
                group: GROUPS[i / MEMBERS].to_string(),
                tester_end: p,
                dut_end: dut_end(i),
                frames_to_dut: tx,
                frames_from_dut: rx,
            })
        })
        .collect()
}

/// What every member carried so far, from the kernel's counters of the partner's veth ends in
/// `netns` (one `ip` call: all four read at once).
pub fn read_members(netns: &str) -> Result<Vec<MemberLoad>> {
    let out = crate::cmd::run("ip", &["-n", netns, "-s", "-j", "link", "show"])?;
    parse_members(&out).ok_or_else(|| Error::Invalid {
        field: "ip -s -j link show",
        value: out.chars().take(200).collect(),
        expected: "stats64 rx/tx packets of the members pm0..pm3".into(),
    })
}

/// One member link's load since the DUT started, from the kernel's counters of the tester's
/// veth end (LACPDUs included: one a second each way at the fast rate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberLoad {
    /// `A` (behind generator port 0) or `B`.
    pub group: String,
    pub tester_end: String,
    pub dut_end: String,
    /// Frames the tester's LAG sent into the DUT on this member.
    pub frames_to_dut: u64,
    /// Frames the DUT sent to the tester's LAG on this member.
    pub frames_from_dut: u64,
}

/// What a `phy2phy-lag` result records beside its trials (`setup.lag` in the results): the
/// frames each member carried in each direction, the tester's LAG's own drops (a loss there is
/// the tester's, not the DUT's) and the LACP state at the end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LagReport {
    pub members: Vec<MemberLoad>,
    /// Frames the partner's ports dropped on receive (rings full) and on transmit.
    pub partner_rx_dropped: u64,
    pub partner_tx_dropped: u64,
    /// Frames the partner dropped inside (its `show errors` drop reasons).
    pub partner_internal_dropped: u64,
    /// The partner's `show errors` lines (`node reason: count`; drop reasons and events).
    pub partner_errors: Vec<String>,
    /// "converged: …", or which member is not and why.
    pub lacp: String,
}

impl LagReport {
    /// The share (0..=1) of `member`'s frames in its group's, toward the DUT and back.
    pub fn shares(&self, member: usize) -> (f64, f64) {
        let m = &self.members[member];
        let group = self.members.iter().filter(|x| x.group == m.group);
        let (to, from) = group.fold((0u64, 0u64), |(a, b), x| {
            (a + x.frames_to_dut, b + x.frames_from_dut)
        });
        let share = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        (share(m.frames_to_dut, to), share(m.frames_from_dut, from))
    }

    /// The difference of two reports' member counts (`self − before`), for one trial.
    pub fn members_since(&self, before: &LagReport) -> Vec<MemberLoad> {
        self.members
            .iter()
            .zip(&before.members)
            .map(|(a, b)| MemberLoad {
                frames_to_dut: a.frames_to_dut.saturating_sub(b.frames_to_dut),
                frames_from_dut: a.frames_from_dut.saturating_sub(b.frames_from_dut),
                ..a.clone()
            })
            .collect()
    }
}

/// A member's counters as the lab's failover procedure reads them.
fn member_frames(m: &MemberLoad) -> MemberFrames {
    MemberFrames {
        group: m.group.clone(),
        member: m.tester_end.clone(),
        device_end: m.dut_end.clone(),
        to_device: m.frames_to_dut,
        from_device: m.frames_from_dut,
    }
}

/// `ip -n NETNS link set MEMBER up|down`.
fn set_member(netns: &str, member: &str, up: bool) -> Result<()> {
    crate::cmd::run(
        "ip",
        &[
            "-n",
            netns,
            "link",
            "set",
            member,
            if up { "up" } else { "down" },
        ],
    )
    .map(|_| ())
}

/// What the partner itself dropped: its ports' receive and transmit drops and its drop reasons,
/// less `kernel-peer-tx-dropped` — the kernel's count of the *device's* end of a member refusing
/// its own transmit (the device's loss seen from the tester's end, not the tester's; with the
/// tester's end down the device's veth counts every frame it tried there). The partner's counters
/// may name one frame at two places (a transmit that failed and the frame it left unsent), so
/// this is what the tester's LAG says it lost, not a split of the trial's loss.
fn partner_dropped(r: &LagReport) -> u64 {
    (r.partner_rx_dropped + r.partner_tx_dropped + r.partner_internal_dropped)
        .saturating_sub(peer_tx_dropped(r))
}

/// The partner's `kernel-peer-tx-dropped` reasons: what the device's member ends failed to send.
fn peer_tx_dropped(r: &LagReport) -> u64 {
    r.partner_errors
        .iter()
        .filter_map(|l| l.split_once(": "))
        .filter(|(what, _)| what.ends_with("kernel-peer-tx-dropped"))
        .filter_map(|(_, n)| n.trim().parse::<u64>().ok())
        .sum()
}

/// The events of a failover trial, on a thread beside the trial: waits until each is due
/// (`start` + its offset), reads every member's counters, then takes the member's link down or
/// brings it up on the tester's end. Returns the readings and when each event was done; stops
/// early (with what it did) when `done` is set (the trial ended, e.g. with an error).
fn run_timeline(
    netns: &str,
    events: &[LinkEvent],
    start: Instant,
    done: &AtomicBool,
) -> Result<(Vec<Vec<MemberLoad>>, Vec<Duration>)> {
    let mut readings = Vec::new();
    let mut applied = Vec::new();
    for e in events {
        loop {
            let left = (start + e.at).saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            if done.load(Ordering::Relaxed) {
                return Ok((readings, applied));
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
        readings.push(read_members(netns)?);
        set_member(netns, &partner_end(e.member), e.up)?;
        applied.push(start.elapsed());
    }
    Ok((readings, applied))
}

/// The lab's failover procedure on `phy2phy-lag` ([`vecswitch_lab::procedures::failover`]): the
/// events act on the tester's end of a member link (`pm<i>` in the generator's namespace: the
/// partner's AF_PACKET port loses its link, the device's end `dut<i>` its carrier), as an
/// operator pulling a cable on the tester's side would.
impl LinkFailover for GenMeasurer<'_> {
    fn members(&mut self) -> std::result::Result<Vec<MemberFrames>, LabError> {
        let netns = lag_netns(self)?;
        read_members(&netns)
            .map(|v| v.iter().map(member_frames).collect())
            .map_err(|e| trial_error(0.0, e))
    }

    /// One trial ([`Measurer::trial`]: accounting, device counters and limits as for any other)
    /// with the events on a thread beside it; the partner's drops and LACP state read before and
    /// after. Then every member the events touched is brought up again and the call waits (at
    /// most [`CONVERGE_TIMEOUT`]) until LACP has every member collecting and distributing on both
    /// sides again, as before the first trial.
    fn trial_with_link_events(
        &mut self,
        load: Load,
        duration: Duration,
        events: &[LinkEvent],
    ) -> std::result::Result<EventTrial, LabError> {
        let netns = lag_netns(self)?;
        let fail = |e: Error| trial_error(load.fps, e);
        if let Some(e) = events.iter().find(|e| e.member >= GROUPS.len() * MEMBERS) {
            return Err(LabError::invalid(
                "failover member",
                e.member,
                "0..=3: the member links pm0..pm3 of phy2phy-lag",
            ));
        }
        let before = lag_report(self).map_err(fail)?;
        let first = read_members(&netns).map_err(fail)?;
        let done = AtomicBool::new(false);
        let (trial, timeline) = std::thread::scope(|s| {
            let start = Instant::now();
            let (ns, done) = (&netns, &done);
            let h = s.spawn(move || run_timeline(ns, events, start, done));
            let trial = self.trial(load, duration);
            done.store(true, Ordering::Relaxed);
            let timeline = h.join().unwrap_or_else(|_| {
                Err(Error::Invalid {
                    field: "failover timeline",
                    value: "its thread panicked".into(),
                    expected: "the link events done".into(),
                })
            });
            (trial, timeline)
        });
        let end = read_members(&netns);
        let after = lag_report(self);
        // Put the group back whatever happened, then report the first error.
        let mut touched: Vec<usize> = events.iter().map(|e| e.member).collect();
        touched.sort_unstable();
        touched.dedup();
        let restored = touched
            .iter()
            .try_for_each(|&m| set_member(&netns, &partner_end(m), true))
            .and_then(|()| {
                if touched.is_empty() {
                    Ok(())
                } else {
                    self.wait_lag_converged()
                }
            });
        let trial = trial?;
        let (mut readings, applied_at) = timeline.map_err(fail)?;
        if applied_at.len() != events.len() {
            return Err(LabError::Trial {
                load_fps: load.fps,
                reason: format!(
                    "{} of the {} link events were done before the trial ended",
                    applied_at.len(),
                    events.len()
                ),
            });
        }
        let (end, after) = (end.map_err(fail)?, after.map_err(fail)?);
        restored.map_err(fail)?;
        readings.insert(0, first);
        readings.push(end);
        Ok(EventTrial {
            trial,
            readings: readings
                .iter()
                .map(|r| r.iter().map(member_frames).collect())
                .collect(),
            applied_at,
            tester_group_dropped: Some(
                partner_dropped(&after).saturating_sub(partner_dropped(&before)),
            ),
            device_member_tx_dropped: Some(
                peer_tx_dropped(&after).saturating_sub(peer_tx_dropped(&before)),
            ),
            state_after: format!(
                "{}; the tester's LAG's drops (rx {} → {}, tx {} → {}, inside {} → {}); its \
                 `show errors`: {}",
                after.lacp,
                before.partner_rx_dropped,
                after.partner_rx_dropped,
                before.partner_tx_dropped,
                after.partner_tx_dropped,
                before.partner_internal_dropped,
                after.partner_internal_dropped,
                after.partner_errors.join(", ")
            ),
        })
    }
}

impl GenMeasurer<'_> {
    /// Waits until the tester's LAG reports LACP converged again ([`converged`]), at most
    /// [`CONVERGE_TIMEOUT`].
    fn wait_lag_converged(&self) -> Result<()> {
        let mut last = String::new();
        let r = crate::cmd::wait_for_result(
            "LACP to converge again after a failover trial",
            CONVERGE_TIMEOUT,
            || {
                let r = lag_report(self)?;
                let ok = r.lacp.starts_with("converged");
                last = r.lacp;
                Ok(ok)
            },
        );
        match r {
            Err(Error::Timeout { timeout, .. }) => Err(Error::Timeout {
                what: format!(
                    "LACP between the tester's LAG and the DUT to converge again after the \
                     failover trial brought the members back up; {last}"
                ),
                timeout,
            }),
            r => r,
        }
    }
}

/// The generator's namespace of a `phy2phy-lag` testbed whose partner runs.
fn lag_netns(m: &GenMeasurer<'_>) -> std::result::Result<String, LabError> {
    m.testbed()
        .filter(|tb| matches!(tb.wiring().topology, crate::Topology::Phy2PhyLag { .. }))
        .and_then(|tb| tb.gen_netns())
        .map(|n| n.name().to_string())
        .ok_or_else(|| {
            LabError::invalid(
                "test.procedure",
                "failover",
                "a started phy2phy-lag testbed (the tester's LAG partner running)",
            )
        })
}

fn lag_report(m: &GenMeasurer<'_>) -> Result<LagReport> {
    m.testbed()
        .and_then(Testbed::lag_report)
        .unwrap_or_else(|| {
            Err(Error::Invalid {
                field: "testbed",
                value: "no LAG partner".into(),
                expected: "a started phy2phy-lag testbed".into(),
            })
        })
}

fn trial_error(load_fps: f64, e: Error) -> LabError {
    LabError::Trial {
        load_fps,
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecswitch_switch::bond::control::LacpSideInfo;
    use vecswitch_switch::bond::lacp::{LacpCounters, RxState};

    #[test]
    fn partner_config_bonds_each_pair_and_connects_it_to_a_generator_link() {
        let gen: Vec<PortEnd> = (0..2)
            .map(|i| PortEnd::Memif {
                name: format!("gen{i}"),
                socket: format!("/r/phy{i}.sock").into(),
                id: 0,
                role: MemifRole::Server,
            })
            .collect();
        let c = partner_config(&gen, "r-gen", Path::new("/r/lag-partner.ctl"), 0);
        crate::dut::vecswitch::assert_valid_round_trip(&c);
        let t = partner_toml(&gen, "r-gen", Path::new("/r/lag-partner.ctl"), 0);
        assert!(t.starts_with("# written by vecswitch-testbed: the tester's LAG partner"));
        for want in [
            "control_socket = \"/r/lag-partner.ctl\"\nworker_cpu = 0\n",
            "type = \"memif\"\nname = \"phy0\"\nsocket = \"/r/phy0.sock\"\nid = 0\nrole = \"client\"\nring_size = 4096\n",
            "type = \"af_packet\"\nname = \"pm3\"\ninterface = \"pm3\"\n",
            "[[bond]]\nname = \"lagA\"\nmode = \"lacp\"\nhash = \"l34\"\nlacp_rate = \"fast\"\nmembers = [\"pm0\", \"pm1\"]\n",
            "[[bond]]\nname = \"lagB\"\nmode = \"lacp\"\nhash = \"l34\"\nlacp_rate = \"fast\"\nmembers = [\"pm2\", \"pm3\"]\n",
            "[[xconnect]]\nports = [\"phy0\", \"lagA\"]\n",
            "[[xconnect]]\nports = [\"phy1\", \"lagB\"]\n",
        ] {
            assert!(t.contains(want), "missing {want:?} in\n{t}");
        }
    }

    #[test]
    fn flows_spread_over_source_ports() {
        let mut s = crate::default_streams(64, true);
        spread_flows(&mut s);
        for st in &s {
            assert_eq!(st.flows, LAG_FLOWS);
            let r: Vec<_> = st
                .ranges
                .iter()
                .filter(|r| r.field == Field::SrcPort)
                .collect();
            assert_eq!(r.len(), 1);
            assert_eq!(r[0].count, LAG_FLOWS);
        }
        // Twice is the same as once.
        let once = s.clone();
        spread_flows(&mut s);
        assert_eq!(s, once);
    }

    #[test]
    fn all_members_parse_from_one_reading_of_the_namespace() {
        let link = |n: &str, rx: u64, tx: u64| {
            format!(
                r#"{{"ifindex":7,"ifname":"{n}","stats64":{{"rx":{{"bytes":0,"packets":{rx}}},"tx":{{"bytes":0,"packets":{tx}}}}}}}"#
            )
        };
        let mut all = vec![link("lo", 9, 9)];
        all.extend((0..4).map(|i| link(&partner_end(i), 10 * i as u64, i as u64)));
        let m = parse_members(&format!("[{}]", all.join(","))).unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(
            (
                m[3].tester_end.as_str(),
                m[3].dut_end.as_str(),
                m[3].group.as_str()
            ),
            ("pm3", "dut3", "B")
        );
        assert_eq!((m[2].frames_from_dut, m[2].frames_to_dut), (20, 2));
        // A member missing from the namespace is an error, not a zero.
        assert!(parse_members(&format!("[{}]", all[..4].join(","))).is_none());
        let f = member_frames(&m[1]);
        assert_eq!(
            (f.member.as_str(), f.to_device, f.from_device),
            ("pm1", 1, 10)
        );
    }

    #[test]
    fn the_tester_drops_leave_out_the_device_transmit_seen_from_the_tester() {
        let r = LagReport {
            members: Vec::new(),
            partner_rx_dropped: 1,
            partner_tx_dropped: 7,
            partner_internal_dropped: 18_630,
            partner_errors: vec![
                "bond-input not-collecting: 16".into(),
                "port pm0 kernel-peer-tx-dropped: 18603".into(),
                "port pm0 tx-kick-errors: 4".into(),
            ],
            lacp: String::new(),
        };
        assert_eq!(partner_dropped(&r), 1 + 7 + 18_630 - 18_603);
        assert_eq!(peer_tx_dropped(&r), 18_603);
    }

    #[test]
    fn link_stats_parse() {
        let j = r#"[{"ifindex":7,"ifname":"pm0","stats64":{"rx":{"bytes":6400,"packets":100,"errors":0,"dropped":0},"tx":{"bytes":640,"packets":10,"errors":0,"dropped":0}}}]"#;
        assert_eq!(parse_link_stats(j), Some((100, 10)));
        assert_eq!(parse_link_stats("[]"), None);
    }

    /// One member of `show lacp`, the switch's own type, as JSON.
    fn member(name: &str, mux: MuxState, dut_flags: &[&str], system: &str) -> String {
        let side = |flags: &[&str], system: &str| LacpSideInfo {
            system_priority: 65535,
            system: system.into(),
            key: 1,
            port_priority: 255,
            port: 1,
            state: 0,
            flags: flags.iter().map(|f| f.to_string()).collect(),
        };
        let m = LacpMemberInfo {
            bond: "lagA".into(),
            member: name.into(),
            actor: side(&[], "02:00:00:00:00:09"),
            partner: side(dut_flags, system),
            rx_state: RxState::Current,
            mux_state: mux,
            selected: true,
            counters: LacpCounters::default(),
        };
        serde_json::to_string(&m).unwrap()
    }

    #[test]
    fn convergence_needs_every_member_on_both_sides_and_names_the_one_missing() {
        let all = ["activity", "synchronization", "collecting", "distributing"];
        let ok = |n: &str| {
            member(
                n,
                MuxState::CollectingDistributing,
                &all,
                "02:00:00:00:00:01",
            )
        };
        let answer = |ms: Vec<String>| format!(r#"{{"ok":true,"data":[{}]}}"#, ms.join(","));
        let good: Vec<String> = (0..4).map(|i| ok(&partner_end(i))).collect();
        assert_eq!(converged(&answer(good.clone())), Ok(()));
        let mut bad = good.clone();
        bad[2] = member(
            "pm2",
            MuxState::Attached,
            &["activity", "synchronization"],
            "02:00:00:00:00:01",
        );
        let e = converged(&answer(bad)).unwrap_err().to_string();
        assert!(
            e.contains("pm2") && e.contains("dut2") && e.contains("attached"),
            "{e}"
        );
        let mut silent = good.clone();
        silent[0] = member("pm0", MuxState::Detached, &[], "00:00:00:00:00:00");
        let e = converged(&answer(silent)).unwrap_err().to_string();
        assert!(e.contains("no LACPDU from the DUT"), "{e}");
        let e = converged(&answer(good[..3].to_vec()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 LACP members"), "{e}");
        // An answer of another shape is unreadable, not "converged".
        let e = converged(r#"{"ok":true,"data":[{"member":"pm0"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unreadable"), "{e}");
    }

    #[test]
    fn shares_are_per_group_and_direction() {
        let m = |g: &str, i: usize, to: u64, from: u64| MemberLoad {
            group: g.into(),
            tester_end: partner_end(i),
            dut_end: dut_end(i),
            frames_to_dut: to,
            frames_from_dut: from,
        };
        let r = LagReport {
            members: vec![
                m("A", 0, 30, 0),
                m("A", 1, 70, 0),
                m("B", 2, 50, 10),
                m("B", 3, 50, 30),
            ],
            partner_rx_dropped: 0,
            partner_tx_dropped: 0,
            partner_internal_dropped: 0,
            partner_errors: error_lines(
                r#"{"ok":true,"data":[{"count":3,"node":"bond-input","reason":"not-collecting"}]}"#,
            ),
            lacp: String::new(),
        };
        assert_eq!(r.partner_errors, ["bond-input not-collecting: 3"]);
        assert_eq!(r.shares(0), (0.3, 0.0));
        assert_eq!(r.shares(3), (0.5, 0.75));
        let d = r.members_since(&r);
        assert!(d
            .iter()
            .all(|x| x.frames_to_dut == 0 && x.frames_from_dut == 0));
    }
}
