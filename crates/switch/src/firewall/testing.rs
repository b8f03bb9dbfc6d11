//! Setups for the instruction-count example (`examples/nat44_packets.rs`). Not used by the switch
//! itself.
//!
//! [`firewall_switch`]: `ip::testing::router_switch` (64-byte UDP frames from 10.0.0.2 port 1000
//! to port 2000 of `flows` destinations 16.0.k.1, routed) with an ACL of `rules` rules on the
//! receiving interface `src`. The first `rules - 1` rules match none of the frames (other
//! sources, other ports — the seed-004 shape: denied ranges, allowed ports), the last one permits
//! them, with `action`: with [`Action::Permit`] every frame walks all the rules; with
//! [`Action::PermitReflect`] the first frame of each flow does and the rest are established
//! connections (one conntrack lookup).
//!
//! [`ips_patterns`]: 100 strings of the kind IPS signatures look for (web attacks, shell
//! commands, malware markers, protocol abuse) for IPS mode's cost ([`firewall_ips_switch`]: the
//! `firewall_switch` with them on the receiving interface).

use crate::firewall::{Acl, Action, Proto, Rule};
use crate::ip::testing::router_switch;
use crate::ip::Ipv4Prefix;
use crate::Switch;

/// The ACL of the module doc.
pub fn acl(rules: u32, action: Action) -> Acl {
    let rules = rules.max(1);
    let mut v: Vec<Rule> = (0..rules - 1)
        .map(|i| {
            let mut r = Rule::any(if i % 2 == 0 {
                Action::Deny
            } else {
                Action::Permit
            });
            // Sources 172.16.i.0/24: never the frames' 10.0.0.2.
            r.src = Some(
                Ipv4Prefix {
                    addr: std::net::Ipv4Addr::new(172, 16, i as u8, 0),
                    len: 24,
                }
                .into(),
            );
            if i % 3 == 0 {
                r.proto = Some(Proto(17));
                let p = 3000 + i as u16;
                r.dport = Some(crate::firewall::PortRange { lo: p, hi: p });
            }
            r
        })
        .collect();
    let mut last = Rule::any(action);
    last.src = Some("10.0.0.0/24".parse().expect("valid prefix"));
    last.proto = Some(Proto(17));
    last.dport = Some(crate::firewall::PortRange { lo: 2000, hi: 2000 });
    v.push(last);
    Acl {
        rules: v,
        default_action: Action::Deny,
    }
}

/// See the module doc. `limit`: frames the source hands out in all (`None`: endless).
pub fn firewall_switch(rules: u32, action: Action, flows: u32, limit: Option<u64>) -> Switch {
    let mut sw = router_switch(flows, limit);
    sw.firewall_set_acl("src", Some(acl(rules, action)))
        .expect("valid ACL");
    sw
}

/// [`firewall_switch`] over `nat44::testing::flows_switch` (`flows` UDP flows to one
/// destination endpoint, any number of them, spread evenly): CSIT's ACL matrix shape (rules ×
/// flows).
pub fn firewall_flows_switch(rules: u32, action: Action, flows: u32, limit: Option<u64>) -> Switch {
    // One remote endpoint: the ACL's last rule permits destination port 2000.
    let mut sw = crate::nat44::testing::flows_switch(flows, 1, limit);
    // Room for every flow's connection (the default limit, 65,536, would drop the rest).
    let settings = crate::firewall::FirewallSettings {
        max_connections: flows.max(1) * 2,
        ..sw.firewall_settings()
    };
    sw.set_firewall_settings(settings).expect("valid settings");
    sw.firewall_set_acl("src", Some(acl(rules, action)))
        .expect("valid ACL");
    sw
}

/// 100 IPS patterns of the usual kinds (see the module doc). None occurs in the benchmark frames.
pub fn ips_patterns() -> Vec<String> {
    [
        "/etc/passwd",
        "/etc/shadow",
        "/bin/sh",
        "/bin/bash",
        "cmd.exe",
        "powershell -e",
        "wget http://",
        "curl -s http://",
        "chmod 777",
        "nc -e /bin",
        "UNION SELECT",
        "' OR '1'='1",
        "OR 1=1--",
        "DROP TABLE",
        "xp_cmdshell",
        "information_schema",
        "<script>",
        "javascript:",
        "onerror=",
        "document.cookie",
        "eval(atob(",
        "String.fromCharCode",
        "../../../",
        "..%2f..%2f",
        "%00",
        "php://input",
        "php://filter",
        "data://text/plain",
        "expect://",
        "/proc/self/environ",
        "${jndi:ldap://",
        "${jndi:rmi://",
        "${jndi:dns://",
        "() { :; };",
        "User-Agent: sqlmap",
        "User-Agent: Nikto",
        "User-Agent: masscan",
        "User-Agent: zgrab",
        "/cgi-bin/test-cgi",
        "/wp-login.php",
        "/xmlrpc.php",
        "/phpmyadmin/",
        "/.git/config",
        "/.env",
        "/server-status",
        "/actuator/env",
        "/manager/html",
        "/HNAP1/",
        "/boaform/admin",
        "/shell?cd+/tmp",
        "/setup.cgi?next_file",
        "/GponForm/diag_Form",
        "Mozi.m",
        "Mozi.a",
        "mirai",
        "/tmp/.x",
        "busybox wget",
        "tftp -g -r",
        "MSSQLSERVER",
        "\\x90\\x90\\x90\\x90",
        "hex:90909090",
        "hex:4d5a9000",
        "hex:7f454c46",
        "This program cannot be run in DOS mode",
        "X5O!P%@AP[4\\PZX54(P^)7CC)7}",
        "EICAR-STANDARD-ANTIVIRUS-TEST-FILE",
        "stratum+tcp://",
        "xmrig",
        "coinhive.min.js",
        "meterpreter",
        "metasploit",
        "mimikatz",
        "sekurlsa::logonpasswords",
        "Invoke-Mimikatz",
        "vssadmin delete shadows",
        "bcdedit /set",
        "wevtutil cl",
        "net user /add",
        "reg add HKLM",
        "schtasks /create",
        "certutil -urlcache",
        "bitsadmin /transfer",
        "rundll32 javascript",
        "mshta http",
        "regsvr32 /s /n /u /i:",
        "SMBv1 NT LM 0.12",
        "hex:ff534d42",
        "hex:fe534d42",
        "\\PIPE\\samr",
        "\\PIPE\\lsarpc",
        "IPC$",
        "ADMIN$",
        "AUTH LOGIN",
        "EHLO",
        "VRFY root",
        "EXPN",
        "SITE EXEC",
        "PORT 127,0,0,1",
        "USER anonymous",
        "TRACE / HTTP/1.1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `firewall_switch(rules, PermitReflect, flows, limit)` with IPS on the receiving interface,
/// its patterns [`ips_patterns`].
pub fn firewall_ips_switch(rules: u32, flows: u32, limit: Option<u64>) -> Switch {
    let mut sw = firewall_switch(rules, Action::PermitReflect, flows, limit);
    sw.firewall_set_ips(
        "src",
        Some(crate::firewall::ips::IpsConfig {
            patterns: ips_patterns(),
            case_insensitive: false,
        }),
    )
    .expect("valid patterns");
    sw
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hundred_distinct_valid_patterns() {
        let p = super::ips_patterns();
        assert_eq!(p.len(), 100);
        let set: std::collections::HashSet<_> = p.iter().collect();
        assert_eq!(set.len(), 100);
        crate::firewall::ips::Ips::new(crate::firewall::ips::IpsConfig {
            patterns: p,
            case_insensitive: false,
        })
        .unwrap();
    }
}
