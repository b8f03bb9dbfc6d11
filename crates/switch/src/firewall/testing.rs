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
            r.src = Ipv4Prefix {
                addr: std::net::Ipv4Addr::new(172, 16, i as u8, 0),
                len: 24,
            };
            if i % 3 == 0 {
                r.proto = Some(Proto(17));
                let p = 3000 + i as u16;
                r.dport = Some(crate::firewall::PortRange { lo: p, hi: p });
            }
            r
        })
        .collect();
    let mut last = Rule::any(action);
    last.src = "10.0.0.0/24".parse().expect("valid prefix");
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
