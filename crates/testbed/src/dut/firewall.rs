//! Firewall DUTs for the rule-count sweep (docs/suites/nat-scale.toml, issue 11's "firewall
//! with 1, 10, 100 rules … compare with … nftables … filter in a namespace … in the same run"):
//! the router plan of [`crate::dut::router`] with an ordered rule list on the ingress side.
//!
//! | name | device | links |
//! |---|---|---|
//! | `vecswitch-router-fw` | vecswitch-router plus `[[firewall]]` on the ingress interface (default deny, the rules of [`policy`]), the egress default deny | memif, veth (AF_PACKET) |
//! | `linux-router-fw` | linux-router plus the same rules as nftables `table inet l7fw` (the `kernel-firewall` chain VNF's rendering) | veth |
//!
//! **Rules** ([`Scale::Rules`], N = 1, 10, 100): the seed-004 shape with the permit last, so
//! every packet walks the list — N − 1 deny rules (the first three deny /28 source ranges that
//! are not the generator's, the rest deny destination /24s of 198.18.0.0/15 other than the
//! traffic's), then `permit` (stateful: vecswitch `permit-reflect`, nftables `accept` behind
//! `ct state established,related accept`) for UDP destination ports 1024–65535. Both
//! renderings are the chain's ([`crate::chain::policy::Policy`]): a rule with prefixes is
//! written once per family (an IPv4 packet is checked against the IPv6 line too in nftables'
//! `inet` table, and skips the IPv6 rules in vecswitch's `firewall-input`).
//!
//! Traffic: [`FIREWALL_FLOWS`] UDP flows (source ports, [`crate::dut::nat::shape_sessions`]'s
//! shape) from 198.18.0.1 to 16.0.0.0, inside → outside. Unreplied UDP stays `new` in the
//! kernel's conntrack (no reply is seen), so every frame walks the nftables chain.
//!
//! Loading: vecswitch's driver appends the `[[firewall]]` sections to the router's config and
//! applies it with one `ctl reload`; the kernel's replaces the table with one `nft -f`.

use std::path::PathBuf;

use vecswitch_control::config::Config;
use vecswitch_gen::StreamSpec;

use crate::chain::policy::{Policy, PolicyRule, Verdict};
use crate::dut::counters::DeviceCounters;
use crate::dut::linux_router::LinuxRouterDut;
use crate::dut::router;
use crate::dut::vecswitch::{to_toml, Mode, VecswitchDut};
use crate::dut::{Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Wiring};

/// Flows the firewall traffic is spread over (CSIT's ACL tests: 100, 10k, 100k flows).
pub const FIREWALL_FLOWS: u32 = 10_000;
/// Most rules a point may ask for (the deny /24s stay inside 198.18.0.0/16).
pub const MAX_RULES: u32 = 250;

/// The policy of `n` rules (see the module doc).
pub fn policy(n: u32) -> Result<Policy> {
    if !(1..=MAX_RULES).contains(&n) {
        return Err(Error::Invalid {
            field: "rules",
            value: n.to_string(),
            expected: format!("1..={MAX_RULES} rules"),
        });
    }
    let mut inside = Vec::with_capacity(n as usize);
    for k in 0..n - 1 {
        let (src, dst) = if k < 3 {
            let h = 208 + 16 * k;
            (
                Some([format!("10.12.1.{h}/28"), format!("fd12:1::{h:x}/124")]),
                None,
            )
        } else {
            // 198.18.1.0/24 upward (198.18.0.0/24 is the generator's own subnet).
            let i = k - 2;
            (
                None,
                Some([
                    format!("198.{}.{}.0/24", 18 + i / 256, i % 256),
                    format!("2001:2:0:{i:x}::/64"),
                ]),
            )
        };
        inside.push(PolicyRule {
            src,
            dst,
            proto: None,
            dport: None,
            verdict: Verdict::Deny,
        });
    }
    inside.push(PolicyRule {
        src: None,
        dst: None,
        proto: Some("udp"),
        dport: Some((1024, 65535)),
        verdict: Verdict::Permit,
    });
    Ok(Policy { inside })
}

/// The rule count of `scale` and its [`policy`]; other kinds are refused.
fn policy_of(dut: &str, scale: Scale) -> Result<(u32, Policy)> {
    match scale {
        Scale::Rules(n) => Ok((n, policy(n)?)),
        other => Err(Error::Unsupported {
            dut: dut.into(),
            what: format!("{other:?}"),
            why: "the firewall DUTs scale rules (scale kind `rules`)".into(),
        }),
    }
}

/// The inner router's shaping, then the firewall traffic's (module doc).
fn shape(inner: &dyn Dut, streams: &mut [StreamSpec]) -> Result<()> {
    inner.shape_streams(streams)?;
    crate::dut::nat::shape_sessions(streams, FIREWALL_FLOWS, 0)
}

/// The inner router's placement records (renamed to `name`), their notes saying the rules
/// loaded: `"{what}: Some(10)"`.
fn rules_noted(
    inner: &dyn Dut,
    name: Option<&str>,
    what: &str,
    rules: Option<u32>,
) -> Vec<PlacedProcess> {
    crate::dut::nat::with_note(inner.processes(), name, &format!("{what}: {rules:?}"))
}

fn io<'a>(
    what: &'static str,
    path: &'a std::path::Path,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// `vecswitch-router-fw` (see the module doc).
#[derive(Debug)]
pub struct VecswitchFwDut {
    bin: PathBuf,
    inner: VecswitchDut,
    wiring: Option<Wiring>,
    rules: Option<u32>,
}

impl VecswitchFwDut {
    pub fn new(bin: PathBuf) -> VecswitchFwDut {
        VecswitchFwDut {
            inner: VecswitchDut::new(bin.clone(), Mode::Router),
            bin,
            wiring: None,
            rules: None,
        }
    }
}

impl Dut for VecswitchFwDut {
    fn name(&self) -> &str {
        "vecswitch-router-fw"
    }

    fn describe(&self) -> String {
        format!("{}, firewall", self.inner.describe())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        self.inner.setup(w)?;
        router::routed_pair(self.name(), w)?;
        self.wiring = Some(w.clone());
        self.configure_scale(Scale::Rules(1))
    }

    fn teardown(&mut self) -> Result<()> {
        self.inner.teardown()
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let (n, p) = policy_of(self.name(), scale)?;
        let w = self.wiring.clone().ok_or_else(|| Error::Invalid {
            field: "vecswitch-router-fw state",
            value: "not set up".into(),
            expected: "configure_scale after setup".into(),
        })?;
        let base = self
            .inner
            .config_path()
            .map(PathBuf::from)
            .ok_or_else(|| Error::Invalid {
                field: "vecswitch-router-fw config",
                value: "none".into(),
                expected: "the router's config written by setup".into(),
            })?;
        // The router's config as the switch reads it, with the policy's `[[firewall]]`s.
        let mut c = Config::from_file(&base).map_err(|source| Error::Config {
            path: base.clone(),
            source,
        })?;
        let (a, b) = router::routed_pair(self.name(), &w)?;
        c.firewall = p.vecswitch_firewalls(w.dut_ports[a].name(), w.dut_ports[b].name(), None)?;
        let path = w.run_dir.join("dut-fw.toml");
        std::fs::write(&path, to_toml(&c)).map_err(io("writing", &path))?;
        let sock = w.run_dir.join("dut.ctl").display().to_string();
        crate::cmd::run(
            &self.bin.display().to_string(),
            &[
                "ctl",
                "--socket",
                &sock,
                "--timeout",
                "60",
                "reload",
                &path.display().to_string(),
            ],
        )?;
        self.rules = Some(n);
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        shape(&self.inner, streams)
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        rules_noted(&self.inner, None, "firewall rules", self.rules)
    }

    fn check_alive(&mut self) -> Result<()> {
        self.inner.check_alive()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        self.inner.counters()
    }
}

/// `linux-router-fw` (see the module doc).
#[derive(Debug, Default)]
pub struct LinuxFwDut {
    inner: LinuxRouterDut,
    wiring: Option<Wiring>,
    ifnames: Option<(String, String)>,
    rules: Option<u32>,
}

impl LinuxFwDut {
    pub fn new() -> LinuxFwDut {
        LinuxFwDut::default()
    }

    fn nft(&self, w: &Wiring, args: &[&str]) -> Result<String> {
        let mut a = vec!["netns", "exec", w.dut_netns.as_str(), "nft"];
        a.extend_from_slice(args);
        crate::cmd::run("ip", &a)
    }
}

impl Dut for LinuxFwDut {
    fn name(&self) -> &str {
        "linux-router-fw"
    }

    fn describe(&self) -> String {
        format!(
            "{}, nftables filter ({})",
            self.inner.describe(),
            crate::dut::version_line("nft", &["--version"])
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        crate::dut::nat::require_nft(self.name(), "nftables filter")?;
        self.inner.setup(w)?;
        let (a, b) = router::routed_pair(self.name(), w)?;
        let name = |i: usize| match &w.dut_ports[i] {
            PortEnd::Veth { ifname, .. } => ifname.clone(),
            p => p.name().to_string(),
        };
        self.ifnames = Some((name(a), name(b)));
        self.wiring = Some(w.clone());
        self.configure_scale(Scale::Rules(1))
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(w) = self.wiring.take() {
            let _ = self.nft(&w, &["delete", "table", "inet", "l7fw"]);
        }
        self.inner.teardown()
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let (n, p) = policy_of(self.name(), scale)?;
        let (Some(w), Some((left, right))) = (self.wiring.clone(), self.ifnames.clone()) else {
            return Err(Error::Invalid {
                field: "linux-router-fw state",
                value: "not set up".into(),
                expected: "configure_scale after setup".into(),
            });
        };
        if self.rules.is_some() {
            self.nft(&w, &["delete", "table", "inet", "l7fw"])?;
        }
        let path = w.run_dir.join("fw.nft");
        std::fs::write(&path, p.nft(&left, &right)).map_err(io("writing", &path))?;
        self.nft(&w, &["-f", &path.display().to_string()])?;
        self.rules = Some(n);
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        shape(&self.inner, streams)
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        rules_noted(
            &self.inner,
            Some("kernel-router-fw"),
            "nftables rules",
            self.rules,
        )
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        self.inner.counters()
    }
}

impl Drop for LinuxFwDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_end_with_the_permit_and_deny_nothing_the_traffic_sends() {
        for n in [1u32, 10, 100, MAX_RULES] {
            let p = policy(n).unwrap();
            assert_eq!(p.inside.len() as u32, n);
            assert_eq!(p.inside.last().unwrap().verdict, Verdict::Permit);
            assert!(p.inside[..n as usize - 1]
                .iter()
                .all(|r| r.verdict == Verdict::Deny));
            for r in &p.inside {
                // Never the generator's source subnet or the traffic's destination.
                for pre in r.src.iter().chain(r.dst.iter()) {
                    assert!(
                        !pre[0].starts_with("198.18.0.") && !pre[0].starts_with("16."),
                        "{pre:?}"
                    );
                }
            }
        }
        assert!(policy(0).is_err() && policy(MAX_RULES + 1).is_err());
        let p = policy(10).unwrap();
        let nft = p.nft("in0", "out0");
        assert!(nft.contains("ip daddr 198.18.1.0/24 counter drop"), "{nft}");
        assert!(nft.contains("udp dport 1024-65535 accept"), "{nft}");
        let fw = p.vecswitch_firewalls("phy0", "phy1", None).unwrap();
        let rules = &fw[0].rules;
        // 9 address rules once per family, the permit once for both.
        assert_eq!(rules.len(), 19);
        assert_eq!(
            rules[18].action,
            vecswitch_switch::firewall::Action::PermitReflect
        );
        // On the router's config, as `configure_scale` writes it: what `ctl reload` takes.
        let w = crate::dut::test_wiring();
        let mut c = crate::dut::vecswitch::config(
            &w.dut_ports,
            &[],
            crate::dut::vecswitch::Mode::Router,
            std::path::Path::new("/r/dut.ctl"),
            Some(1),
        );
        c.ip = crate::dut::vecswitch_router::ip_config(&w, (0, 1), 1);
        c.firewall = fw;
        crate::dut::vecswitch::assert_valid_round_trip(&c);
    }
}
