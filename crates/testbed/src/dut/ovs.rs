//! `ovs`: Open vSwitch (Debian's `openvswitch-switch`) with the userspace `netdev` datapath, started
//! by hand — there is no systemd here (DESIGN.md, pitfalls) and the host's own OVS, if any, must not
//! be touched.
//!
//! Everything lives in `<run dir>/ovs/`: a fresh database (`ovsdb-tool create`), `ovsdb-server` on
//! a private socket, `ovs-vswitchd` with private unixctl, pid and log files and `OVS_RUNDIR` pointing
//! there (bridge management sockets). Both daemons run in the foreground as children inside the DUT
//! namespace, pinned to the DUT CPU; the PMD threads get `pmd-cpu-mask` of that CPU.
//!
//! Ports: one `netdev` bridge per port pair; each DUT veth end is added as `type=afxdp` (≈ 0.84 Mpps
//! measured here, with a PMD thread) and, if OVS reports an error for it, re-added as a plain
//! `system` port (≈ 0.05 Mpps, polled by the main thread). Which one was used is in
//! [`OvsDut::port_types`] and in `describe`. Forwarding is port-to-port OpenFlow rules
//! (`in_port=A,actions=output:B` and back), as VSPERF's phy2phy tests program it.
//!
//! Shutdown: `ovs-appctl exit --cleanup` to vswitchd, `exit` to ovsdb-server, then the process
//! guards reap (and, if needed, kill) both.
//!
//! Scale: [`Scale::Flows`] adds that many extra rules that never match the test traffic (distinct
//! destination MACs), so the classifier holds them while forwarding.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cmd::{run_env, run_quiet};
use crate::dut::{placed, unsupported_wiring, version_line, Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::{CorePlan, PlacedProcess};
use crate::process::{ChildGuard, ProcessSpec};
use crate::topology::{PortEnd, Wiring};

/// The OVS database schema shipped by `openvswitch-common`.
pub const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// The OVS userspace DUT.
#[derive(Debug, Default)]
pub struct OvsDut {
    dir: Option<PathBuf>,
    bridges: Vec<String>,
    vswitchd: Option<ChildGuard>,
    ovsdb: Option<ChildGuard>,
    port_types: Vec<(String, String)>,
    /// Try afxdp ports first (default true).
    no_afxdp: bool,
}

impl OvsDut {
    pub fn new() -> OvsDut {
        OvsDut::default()
    }

    /// Uses kernel-socket (`system`) ports only, without trying afxdp.
    pub fn system_ports_only(mut self) -> OvsDut {
        self.no_afxdp = true;
        self
    }

    /// `(interface, type)` of each port added: `afxdp` or `system`.
    pub fn port_types(&self) -> &[(String, String)] {
        &self.port_types
    }

    fn dir(&self) -> Result<&Path> {
        self.dir.as_deref().ok_or_else(|| Error::Invalid {
            field: "ovs state",
            value: "not set up".into(),
            expected: "setup before this call".into(),
        })
    }

    /// Runs an OVS tool against this instance's database and run directory.
    fn tool(&self, program: &str, args: &[&str]) -> Result<String> {
        let dir = self.dir()?;
        let d = dir.display().to_string();
        let db = format!("--db=unix:{d}/db.sock");
        let mut a: Vec<&str> = Vec::new();
        if program == "ovs-vsctl" {
            a.push(&db);
            a.push("--timeout=20");
        }
        a.extend_from_slice(args);
        run_env(
            program,
            &a,
            &[("OVS_RUNDIR", &d), ("OVS_DBDIR", &d), ("OVS_LOGDIR", &d)],
        )
    }

    fn vsctl(&self, args: &[&str]) -> Result<String> {
        self.tool("ovs-vsctl", args)
    }

    fn ofctl(&self, args: &[&str]) -> Result<String> {
        self.tool("ovs-ofctl", args)
    }

    /// Adds `ifname` to `br` as afxdp, falling back to a system port; returns the type used.
    fn add_port(&mut self, br: &str, ifname: &str) -> Result<String> {
        if !self.no_afxdp {
            self.vsctl(&[
                "add-port",
                br,
                ifname,
                "--",
                "set",
                "interface",
                ifname,
                "type=afxdp",
            ])?;
            let err = self
                .vsctl(&["get", "interface", ifname, "error"])
                .unwrap_or_default();
            let ofport = self
                .vsctl(&["get", "interface", ifname, "ofport"])
                .unwrap_or_default();
            let err = err.trim().trim_matches('"');
            if (err.is_empty() || err == "[]") && ofport.trim().parse::<i64>().is_ok_and(|p| p > 0)
            {
                return Ok("afxdp".into());
            }
            tracing::warn!(
                ifname,
                err,
                "afxdp port failed; falling back to a system port"
            );
            self.vsctl(&["del-port", br, ifname])?;
        }
        self.vsctl(&["add-port", br, ifname])?;
        Ok("system".into())
    }
}

impl Dut for OvsDut {
    fn name(&self) -> &str {
        "ovs"
    }

    fn describe(&self) -> String {
        let types: Vec<String> = self
            .port_types
            .iter()
            .map(|(i, t)| format!("{i}:{t}"))
            .collect();
        format!(
            "{} (userspace netdev datapath, ports {})",
            version_line("ovs-vswitchd", &["--version"]),
            if types.is_empty() {
                "not set up".to_string()
            } else {
                types.join(" ")
            }
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        if !w.all_dut_ports_veth() {
            return Err(unsupported_wiring(
                self.name(),
                w,
                "this OVS build has no memif port; use phy2phy-veth (ovs-dpdk would need net_memif)",
            ));
        }
        for p in [
            "ovsdb-tool",
            "ovsdb-server",
            "ovs-vswitchd",
            "ovs-vsctl",
            "ovs-ofctl",
            "ovs-appctl",
        ] {
            if !crate::cmd::have(p) {
                return Err(Error::Unsupported {
                    dut: self.name().into(),
                    what: "this machine".into(),
                    why: format!(
                        "{p} not found; install the Debian package openvswitch-switch (make setup)"
                    ),
                });
            }
        }
        let dir = w.run_dir.join("ovs");
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            what: "creating",
            path: dir.clone(),
            source,
        })?;
        let d = dir.display().to_string();
        self.dir = Some(dir.clone());
        crate::cmd::run("ovsdb-tool", &["create", &format!("{d}/conf.db"), SCHEMA])?;
        let cpus = Some(vec![w.cores.dut]);
        let env = [
            ("OVS_RUNDIR", d.as_str()),
            ("OVS_DBDIR", d.as_str()),
            ("OVS_LOGDIR", d.as_str()),
        ];
        let mut spec = ProcessSpec::new("dut-ovsdb-server", "ovsdb-server")
            .args([
                format!("{d}/conf.db"),
                format!("--remote=punix:{d}/db.sock"),
                format!("--unixctl={d}/ovsdb-server.ctl"),
                format!("--pidfile={d}/ovsdb-server.pid"),
                format!("--log-file={d}/ovsdb-server.log"),
            ])
            .netns(Some(&w.dut_netns))
            .cpus(cpus.clone());
        for (k, v) in env {
            spec = spec.env(k, v);
        }
        let mut db = ChildGuard::spawn(&spec, &w.run_dir)?;
        let r = db.wait_for_path(&dir.join("db.sock"), Duration::from_secs(20));
        self.ovsdb = Some(db);
        r?;
        self.vsctl(&["--no-wait", "init"])?;
        let mask = format!(
            "other_config:pmd-cpu-mask=0x{:x}",
            CorePlan::mask(w.cores.dut)
        );
        self.vsctl(&["--no-wait", "set", "Open_vSwitch", ".", &mask])?;
        let mut spec = ProcessSpec::new("dut-ovs-vswitchd", "ovs-vswitchd")
            .args([
                format!("unix:{d}/db.sock"),
                format!("--unixctl={d}/ovs-vswitchd.ctl"),
                format!("--pidfile={d}/ovs-vswitchd.pid"),
                format!("--log-file={d}/ovs-vswitchd.log"),
            ])
            .netns(Some(&w.dut_netns))
            .cpus(cpus);
        for (k, v) in env {
            spec = spec.env(k, v);
        }
        let mut sw = ChildGuard::spawn(&spec, &w.run_dir)?;
        let r = sw.wait_for_path(&dir.join("ovs-vswitchd.ctl"), Duration::from_secs(30));
        self.vswitchd = Some(sw);
        r?;
        for (n, (a, b)) in w.pairs.iter().enumerate() {
            let br = format!("br{n}");
            self.vsctl(&[
                "add-br",
                &br,
                "--",
                "set",
                "bridge",
                &br,
                "datapath_type=netdev",
            ])?;
            self.bridges.push(br.clone());
            let mut names = Vec::new();
            for i in [*a, *b] {
                let PortEnd::Veth { ifname, .. } = &w.dut_ports[i] else {
                    unreachable!("checked above: all veth");
                };
                let t = self.add_port(&br, ifname)?;
                self.port_types.push((ifname.clone(), t));
                names.push(ifname.clone());
            }
            self.ofctl(&["del-flows", &br])?;
            self.ofctl(&[
                "add-flow",
                &br,
                &format!("in_port={},actions=output:{}", names[0], names[1]),
            ])?;
            self.ofctl(&[
                "add-flow",
                &br,
                &format!("in_port={},actions=output:{}", names[1], names[0]),
            ])?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(dir) = self.dir.clone() {
            let d = dir.display().to_string();
            if self.vswitchd.is_some() {
                run_quiet(
                    "ovs-appctl",
                    &["-t", &format!("{d}/ovs-vswitchd.ctl"), "exit", "--cleanup"],
                );
            }
            if let Some(mut c) = self.vswitchd.take() {
                c.stop(Duration::from_secs(3));
            }
            if self.ovsdb.is_some() {
                run_quiet(
                    "ovs-appctl",
                    &["-t", &format!("{d}/ovsdb-server.ctl"), "exit"],
                );
            }
            if let Some(mut c) = self.ovsdb.take() {
                c.stop(Duration::from_secs(3));
            }
        }
        self.bridges.clear();
        self.dir = None;
        Ok(())
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let Scale::Flows(n) = scale else {
            return Err(Error::Unsupported {
                dut: self.name().into(),
                what: format!("{scale:?}"),
                why: "the ovs driver programs port-to-port flows; scale it with Flows(n)".into(),
            });
        };
        let br = self
            .bridges
            .first()
            .cloned()
            .ok_or_else(|| Error::Invalid {
                field: "ovs state",
                value: "no bridge".into(),
                expected: "configure_scale after setup".into(),
            })?;
        let mut rules = String::with_capacity(n as usize * 64);
        for i in 0..n {
            // Higher priority than the port rules, but matching MACs the generator never sends.
            rules.push_str(&format!(
                "priority=100,dl_dst={},actions=drop\n",
                crate::dut::linux_bridge::scale_mac(i)
            ));
        }
        let path = self.dir()?.join("scale.flows");
        std::fs::write(&path, rules).map_err(|source| Error::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        self.ofctl(&["add-flows", &br, &path.display().to_string()])?;
        Ok(())
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        let mut v = Vec::new();
        if let Some(c) = &self.vswitchd {
            v.push(placed(
                c,
                "main thread and PMD threads (pmd-cpu-mask) on the DUT CPU",
            ));
        }
        if let Some(c) = &self.ovsdb {
            v.push(placed(c, "database server, idle while forwarding"));
        }
        v
    }

    fn check_alive(&mut self) -> Result<()> {
        for c in [&mut self.vswitchd, &mut self.ovsdb].into_iter().flatten() {
            c.check_alive()?;
        }
        Ok(())
    }
}

impl Drop for OvsDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}
