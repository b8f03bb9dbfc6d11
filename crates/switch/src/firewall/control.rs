//! Firewall control: ACLs per interface, settings, `show firewall` (typed), the conntrack expiry
//! timer. Methods on [`Switch`].

use serde::{Deserialize, Serialize};

use super::acl::{Acl, Action, Rule};
use super::ips::{Ips, IpsConfig};
use super::{firewall_input, firewall_input6, FirewallSettings, InterfaceAcl};
use crate::error::SwitchError;
use crate::interface::SwIfIdx;
use crate::ip::{IP4_UNICAST_ARC, IP6_UNICAST_ARC};
use crate::runtime::Switch;

/// How often (switch time) the conntrack sweep runs, and how many slots each step visits.
pub const SWEEP_EVERY_NS: u64 = 100_000_000;
pub const SWEEP_SLOTS: usize = 4096;

/// One rule of `show firewall` with its hit counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleInfo {
    pub index: usize,
    pub rule: Rule,
    pub hits: u64,
}

/// One interface's ACL in `show firewall`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclInfo {
    pub interface: String,
    pub rules: Vec<RuleInfo>,
    pub default_action: Action,
    pub default_hits: u64,
    /// IPS mode: each pattern with the packets it dropped, and the packets searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ips: Option<IpsInfo>,
}

/// IPS mode of one interface in `show firewall`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsInfo {
    pub case_insensitive: bool,
    /// (pattern, packets dropped for it).
    pub patterns: Vec<(String, u64)>,
    pub scanned: u64,
}

/// `show firewall`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirewallInfo {
    pub acls: Vec<AclInfo>,
    /// Connections tracked, and how many of them are reflected (established).
    pub connections: usize,
    pub reflected: usize,
    pub connections_created: u64,
    pub connections_expired: u64,
    pub settings: FirewallSettings,
}

impl Switch {
    /// Applies `acl` to the packets interface `iface` receives (`None`: no filtering there).
    /// The rules are checked first; the hit counters start at zero.
    pub fn firewall_set_acl(&mut self, iface: &str, acl: Option<Acl>) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        if let Some(a) = &acl {
            a.validate().map_err(|e| SwitchError::InvalidValue {
                field: "firewall rule",
                value: e.to_string(),
                accepted: "rules whose ports come with proto tcp or udp, icmp-type with proto icmp or icmpv6, and prefixes of one family",
            })?;
        }
        self.set_interface_feature(iface, IP4_UNICAST_ARC, firewall_input::NAME, acl.is_some())?;
        self.set_interface_feature(iface, IP6_UNICAST_ARC, firewall_input6::NAME, acl.is_some())?;
        let fw = &mut self.state.firewall;
        let i = idx as usize;
        if fw.acls.len() <= i {
            fw.acls.resize(i + 1, None);
        }
        let ips = fw.acls[i].take().and_then(|a| a.ips);
        fw.acls[i] = acl.map(|acl| InterfaceAcl {
            hits: vec![0; acl.rules.len()],
            classifier: super::classify::Classifier::new(&acl),
            acl,
            default_hits: 0,
            ips,
        });
        Ok(())
    }

    /// Sets the IPS patterns of interface `iface`, which must have an ACL (`None`: IPS off). The
    /// patterns are checked first; the hit counters start at zero.
    pub fn firewall_set_ips(
        &mut self,
        iface: &str,
        ips: Option<IpsConfig>,
    ) -> Result<(), SwitchError> {
        let idx = self.iface_idx(iface)?;
        let compiled = ips
            .map(Ips::new)
            .transpose()
            .map_err(|e| SwitchError::InvalidValue {
                field: "firewall ips",
                value: e.to_string(),
                accepted: "1 to 10000 patterns of 1 to 1024 bytes (text, or hex: and hex digits)",
            })?;
        match self.state.firewall.acls.get_mut(idx as usize) {
            Some(Some(a)) => {
                a.ips = compiled;
                Ok(())
            }
            _ if compiled.is_none() => Ok(()),
            _ => Err(SwitchError::InvalidValue {
                field: "firewall ips interface",
                value: iface.to_string(),
                accepted:
                    "an interface with a firewall ACL (IPS searches what the ACL lets through)",
            }),
        }
    }

    /// The firewall settings.
    pub fn firewall_settings(&self) -> FirewallSettings {
        self.state.firewall.settings
    }

    /// Changes the firewall settings (every value must be at least 1).
    pub fn set_firewall_settings(&mut self, s: FirewallSettings) -> Result<(), SwitchError> {
        for (field, v) in [
            ("tcp_established_s", s.tcp_established_s),
            ("tcp_transitory_s", s.tcp_transitory_s),
            ("udp_s", s.udp_s),
            ("icmp_s", s.icmp_s),
            ("max_connections", s.max_connections),
        ] {
            if v == 0 {
                return Err(SwitchError::InvalidValue {
                    field,
                    value: v.to_string(),
                    accepted: "1 or more",
                });
            }
        }
        self.state.firewall.settings = s;
        Ok(())
    }

    /// Forgets every tracked connection.
    pub fn firewall_clear_connections(&mut self) {
        self.state.firewall.conntrack.clear();
    }

    /// The conntrack expiry timer (every [`SWEEP_EVERY_NS`] of switch time, [`SWEEP_SLOTS`]
    /// slots); returns how many connections it removed.
    pub fn firewall_expire_step(&mut self) -> usize {
        let now = self.now_ns();
        let fw = &mut self.state.firewall;
        if fw.conntrack.is_empty() || now.saturating_sub(fw.last_sweep_ns) < SWEEP_EVERY_NS {
            return 0;
        }
        fw.last_sweep_ns = now;
        let s = fw.settings;
        fw.conntrack
            .expire_step(now, SWEEP_SLOTS, |c| s.timeout_ns(c))
    }

    /// `show firewall`: every interface's ACL with its counters, and the conntrack totals.
    pub fn show_firewall(&self) -> FirewallInfo {
        let fw = &self.state.firewall;
        let acls = fw
            .acls
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.as_ref().map(|a| (i, a)))
            .map(|(i, a)| AclInfo {
                interface: self.iface_name(i as SwIfIdx),
                rules: a
                    .acl
                    .rules
                    .iter()
                    .zip(&a.hits)
                    .enumerate()
                    .map(|(index, (rule, &hits))| RuleInfo {
                        index,
                        rule: *rule,
                        hits,
                    })
                    .collect(),
                default_action: a.acl.default_action,
                default_hits: a.default_hits,
                ips: a.ips.as_ref().map(|i| IpsInfo {
                    case_insensitive: i.config.case_insensitive,
                    patterns: i
                        .config
                        .patterns
                        .iter()
                        .cloned()
                        .zip(i.hits.clone())
                        .collect(),
                    scanned: i.scanned,
                }),
            })
            .collect();
        FirewallInfo {
            acls,
            connections: fw.conntrack.len(),
            reflected: fw.conntrack.iter().filter(|c| c.reflect).count(),
            connections_created: fw.conntrack.created,
            connections_expired: fw.conntrack.expired,
            settings: fw.settings,
        }
    }
}
