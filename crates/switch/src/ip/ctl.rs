//! The IP feature's control surface, registered from here (see [`crate::ctl`]): the `[ip]`
//! section ([`SECTION`]) with its verbs (`ip address add|del`, `ip route add|del`,
//! `ip neighbor add|del`, `ip set KEY VALUE`), and `show ip …` / `show ip6 …` ([`SHOWS`]):
//!
//! ```text
//! show ip fib [PREFIX] [OFFSET] [LIMIT]     routes in prefix order (a count and one page)
//! show ip neighbors [OFFSET] [LIMIT]        ARP entries (counts and one page)
//! show ip interfaces                        IPv4 addresses per interface
//! show ip6 fib|neighbors|interfaces …       the same for IPv6
//! ```
//!
//! A page holds [`DEFAULT_LIMIT`] entries unless `LIMIT` says otherwise (at most 10,000): a
//! 1M-route table prints its counts and one page, never a million lines.

use std::net::IpAddr;

use super::config::{
    ip_objects, validate_ip, AddressConfig, IpConfig, IpPrefix, NeighborConfig, RouteConfig,
};
use super::control::{FibInfo, IpInterfaceInfo, NeighborsInfo, PathInfo};
use super::control6::{Fib6Info, Ip6InterfaceInfo, Neighbors6Info};
use super::{Adjacency, Ipv4Prefix, Ipv6Prefix};
use crate::ctl::{json, page_args, typed, Align, Section, Show, ShowError, Table, Verb};
use crate::error::SwitchError;
use crate::object::EditError;
use crate::runtime::Switch;

/// Entries in a page of `show ip fib` / `show ip neighbors` when no limit is given.
pub const DEFAULT_LIMIT: usize = 100;

/// `[ip]` and its `ctl` verbs.
pub const SECTION: Section<IpConfig> = Section {
    key: "ip",
    validate: |c, v| validate_ip(c, v),
    objects: |c, o| ip_objects(c, o),
    verbs: &[
        Verb {
            names: &["ip address add"],
            usage: "INTERFACE ADDRESS/LEN",
            help: "adds an IPv4 or IPv6 address to an interface (VPP: set interface ip address)",
            apply: address_add,
        },
        Verb {
            names: &["ip address del", "ip address delete"],
            usage: "INTERFACE ADDRESS/LEN",
            help: "removes an interface address",
            apply: address_del,
        },
        Verb {
            names: &["ip route add"],
            usage: "PREFIX via NEXT-HOP [NEXT-HOP]...",
            help: "adds a static route over 1 to 8 next hops (ECMP), IPv4 or IPv6",
            apply: route_add,
        },
        Verb {
            names: &["ip route del", "ip route delete"],
            usage: "PREFIX",
            help: "removes a static route",
            apply: route_del,
        },
        Verb {
            names: &["ip neighbor add", "ip neighbour add"],
            usage: "INTERFACE IP MAC",
            help: "adds a static ARP / ND entry (VPP: set ip neighbor)",
            apply: neighbor_add,
        },
        Verb {
            names: &["ip neighbor del", "ip neighbor delete", "ip neighbour del"],
            usage: "INTERFACE IP",
            help: "removes a static neighbour",
            apply: neighbor_del,
        },
        Verb {
            names: &["ip set"],
            usage: "KEY VALUE",
            help: "sets an [ip] key: allow_options, allow_hop_by_hop, icmp_errors_per_s, icmp_burst, neighbor_limit, neighbor_age_s, arp_pending, arp_max_requests",
            apply: set,
        },
    ],
};

fn words<'a, const N: usize>(
    w: &'a [String],
    field: &'static str,
    accepted: &'static str,
) -> Result<&'a [String; N], EditError> {
    w.try_into().map_err(|_| EditError {
        field,
        value: w.join(" "),
        accepted,
    })
}

fn prefix(s: &str) -> Result<IpPrefix, EditError> {
    s.parse().map_err(|_| EditError {
        field: "PREFIX",
        value: s.to_string(),
        accepted: "an IPv4 or IPv6 prefix such as 10.0.0.1/24 or 2001:db8::1/64",
    })
}

fn ip(s: &str) -> Result<IpAddr, EditError> {
    s.parse().map_err(|_| EditError {
        field: "IP",
        value: s.to_string(),
        accepted: "an IPv4 or IPv6 address",
    })
}

fn address_add(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [iface, a] = words::<2>(w, "INTERFACE ADDRESS/LEN", "an interface and an address")?;
    c.address.push(AddressConfig {
        interface: iface.clone(),
        address: prefix(a)?,
    });
    Ok(())
}

fn address_del(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [iface, a] = words::<2>(w, "INTERFACE ADDRESS/LEN", "an interface and an address")?;
    let a = prefix(a)?;
    remove_matching(
        &mut c.address,
        |x| x.interface == *iface && x.address == a,
        EditError {
            field: "ADDRESS",
            value: format!("{iface} {a}"),
            accepted: "an address of the running config (show config)",
        },
    )
}

/// Removes the entries of `v` that `hit` selects; `none` if there is none.
fn remove_matching<T>(
    v: &mut Vec<T>,
    hit: impl Fn(&T) -> bool,
    none: EditError,
) -> Result<(), EditError> {
    let before = v.len();
    v.retain(|x| !hit(x));
    if v.len() == before {
        return Err(none);
    }
    Ok(())
}

fn route_add(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let (Some(p), Some("via"), hops) = (w.first(), w.get(1).map(String::as_str), w.get(2..)) else {
        return Err(EditError {
            field: "PREFIX via NEXT-HOP",
            value: w.join(" "),
            accepted: "a prefix, `via` and 1 to 8 next hops (`192.168.0.0/16 via 10.1.0.2`)",
        });
    };
    let prefix = prefix(p)?;
    let via = hops
        .unwrap_or_default()
        .iter()
        .map(|h| ip(h))
        .collect::<Result<Vec<_>, _>>()?;
    c.route.retain(|r| !(r.prefix == prefix && r.table == 0));
    c.route.push(RouteConfig {
        prefix,
        via,
        table: 0,
    });
    Ok(())
}

fn route_del(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [p] = words::<1>(w, "PREFIX", "the prefix of a static route")?;
    let p = prefix(p)?;
    remove_matching(
        &mut c.route,
        |r| r.prefix == p && r.table == 0,
        EditError {
            field: "PREFIX",
            value: p.to_string(),
            accepted: "a static route of the running config (show config)",
        },
    )
}

fn neighbor_add(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [iface, a, mac] = words::<3>(w, "INTERFACE IP MAC", "an interface, an address, a MAC")?;
    let ip = ip(a)?;
    let mac = mac.parse().map_err(|_| EditError {
        field: "MAC",
        value: mac.clone(),
        accepted: "a MAC such as 02:00:00:00:00:0b",
    })?;
    c.neighbor
        .retain(|n| !(n.interface == *iface && n.ip == ip));
    c.neighbor.push(NeighborConfig {
        interface: iface.clone(),
        ip,
        mac,
    });
    Ok(())
}

fn neighbor_del(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [iface, a] = words::<2>(w, "INTERFACE IP", "an interface and an address")?;
    let ip = ip(a)?;
    remove_matching(
        &mut c.neighbor,
        |n| n.interface == *iface && n.ip == ip,
        EditError {
            field: "IP",
            value: format!("{iface} {ip}"),
            accepted: "a static neighbour of the running config (show config)",
        },
    )
}

fn set(c: &mut IpConfig, w: &[String]) -> Result<(), EditError> {
    let [key, value] = words::<2>(w, "KEY VALUE", "an [ip] key and its value")?;
    let flag = || {
        value.parse::<bool>().map_err(|_| EditError {
            field: "VALUE",
            value: value.clone(),
            accepted: "true or false",
        })
    };
    let num = || {
        value.parse::<u32>().map_err(|_| EditError {
            field: "VALUE",
            value: value.clone(),
            accepted: "a whole number 0..=4294967295",
        })
    };
    match key.as_str() {
        "allow_options" => c.allow_options = Some(flag()?),
        "allow_hop_by_hop" => c.allow_hop_by_hop = Some(flag()?),
        "icmp_errors_per_s" => c.icmp_errors_per_s = Some(num()?),
        "icmp_burst" => c.icmp_burst = Some(num()?),
        "neighbor_limit" => c.neighbor_limit = Some(num()?),
        "neighbor_age_s" => c.neighbor_age_s = Some(num()?),
        "arp_pending" => c.arp_pending = Some(num()?),
        "arp_max_requests" => c.arp_max_requests = Some(num()?),
        _ => {
            return Err(EditError {
                field: "KEY",
                value: key.clone(),
                accepted: "allow_options, allow_hop_by_hop, icmp_errors_per_s, icmp_burst, neighbor_limit, neighbor_age_s, arp_pending, arp_max_requests",
            })
        }
    }
    Ok(())
}

// ----- shows ---------------------------------------------------------------------------------------

/// `show ip …` and `show ip6 …`.
pub const SHOWS: &[Show] = &[
    Show {
        word: "ip",
        aliases: &["ip4"],
        args: &["fib|neighbors|interfaces", "PREFIX", "OFFSET", "LIMIT"],
        help: "IPv4: fib [PREFIX] [OFFSET] [LIMIT] (routes, paths, counts), neighbors [OFFSET] [LIMIT] (ARP), interfaces",
        run: |sw, a| run(sw, a, false),
        render: |v| {
            typed::<FibInfo>(v)
                .map(|f| fib(&f))
                .or_else(|| typed::<NeighborsInfo>(v).map(|n| neighbors(&n)))
                .or_else(|| typed::<Vec<IpInterfaceInfo>>(v).map(|i| interfaces4(&i)))
        },
    },
    Show {
        word: "ip6",
        aliases: &["ipv6"],
        args: &["fib|neighbors|interfaces", "PREFIX", "OFFSET", "LIMIT"],
        help: "IPv6: fib [PREFIX] [OFFSET] [LIMIT], neighbors [OFFSET] [LIMIT] (ND), interfaces (with link-local addresses)",
        run: |sw, a| run(sw, a, true),
        render: |v| {
            typed::<Fib6Info>(v)
                .map(|f| fib(&f))
                .or_else(|| typed::<Neighbors6Info>(v).map(|n| neighbors(&n)))
                .or_else(|| typed::<Vec<Ip6InterfaceInfo>>(v).map(|i| interfaces6(&i)))
        },
    },
];

fn bad_arg(field: &'static str, value: &str, accepted: &'static str) -> ShowError {
    ShowError::Switch(SwitchError::InvalidValue {
        field,
        value: value.to_string(),
        accepted,
    })
}

/// `[OFFSET] [LIMIT]` from `rest`.
fn page(rest: &[String]) -> Result<(usize, usize), ShowError> {
    page_args(rest, DEFAULT_LIMIT)
}

fn run(sw: &Switch, a: &[String], v6: bool) -> Result<serde_json::Value, ShowError> {
    let word = if v6 { "ip6" } else { "ip" };
    let sub = a.first().map_or("fib", String::as_str);
    let rest = a.get(1..).unwrap_or_default();
    match sub {
        "fib" | "route" | "routes" => {
            // A first word that is not a number is the prefix filter.
            let (filter, rest) = match rest.first() {
                Some(p) if p.parse::<usize>().is_err() => (Some(p.as_str()), &rest[1..]),
                _ => (None, rest),
            };
            let (offset, limit) = page(rest)?;
            if v6 {
                let f = filter
                    .map(|p| {
                        p.parse::<Ipv6Prefix>().map_err(|_| {
                            bad_arg("PREFIX", p, "an IPv6 prefix such as 2001:db8::/32")
                        })
                    })
                    .transpose()?;
                json(word, sw.show_ip6_fib(0, f, offset, limit)?)
            } else {
                let f = filter
                    .map(|p| {
                        p.parse::<Ipv4Prefix>()
                            .map_err(|_| bad_arg("PREFIX", p, "an IPv4 prefix such as 10.0.0.0/8"))
                    })
                    .transpose()?;
                json(word, sw.show_ip_fib(0, f, offset, limit)?)
            }
        }
        "neighbors" | "neighbours" | "neighbor" | "neighbour" | "arp" | "nd" => {
            let (offset, limit) = page(rest)?;
            if v6 {
                json(word, sw.show_ip6_neighbors(offset, limit)?)
            } else {
                json(word, sw.show_ip_neighbors(offset, limit)?)
            }
        }
        "interfaces" | "interface" | "int" if rest.is_empty() => {
            if v6 {
                json(word, sw.show_ip6_interfaces())
            } else {
                json(word, sw.show_ip_interfaces())
            }
        }
        _ => Err(bad_arg(
            "show ip",
            &a.join(" "),
            "fib [PREFIX] [OFFSET] [LIMIT], neighbors [OFFSET] [LIMIT] or interfaces",
        )),
    }
}

fn path_text<A: std::fmt::Display>(p: &PathInfo<A>) -> String {
    let on = p.interface.as_deref().unwrap_or("-");
    match &p.adjacency {
        Adjacency::Drop => "drop".into(),
        Adjacency::Local => "local".into(),
        Adjacency::Glean { .. } => format!("glean {on}"),
        Adjacency::Neighbor { nh, .. } => format!("via {nh} {on}"),
    }
}

fn source(s: super::RouteSource) -> &'static str {
    match s {
        super::RouteSource::Connected => "connected",
        super::RouteSource::Local => "local",
        super::RouteSource::Static => "static",
    }
}

fn summary<P, A>(f: &FibInfo<P, A>) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let per_route = |b: u64| b.checked_div(f.routes as u64).unwrap_or(0);
    let fib = f.fib_memory_bytes as u64;
    let process = f.process_rss_bytes.map_or(String::new(), |rss| {
        format!(
            "; process {:.1} MiB resident ({} B/route)",
            mib(rss),
            per_route(rss)
        )
    });
    format!(
        "{} routes, {} matched, showing {} from {}; {} adjacencies; FIB {:.1} MiB ({} B/route){process}\n",
        f.routes,
        f.matched,
        f.entries.len(),
        f.offset,
        f.adjacencies,
        mib(fib),
        per_route(fib)
    )
}

fn fib<P: std::fmt::Display, A: std::fmt::Display>(f: &FibInfo<P, A>) -> String {
    use Align::Left as L;
    let mut t = Table::new(&[("Prefix", L), ("Source", L), ("Paths", L)]);
    for e in &f.entries {
        let ps: Vec<String> = e.paths.iter().map(path_text).collect();
        t.row(vec![
            e.prefix.to_string(),
            source(e.source).into(),
            ps.join(", "),
        ]);
    }
    summary(f) + &t.render()
}

/// `show ip neighbors` / `show ip6 neighbors` (the count of waiting packets freed by control
/// calls only where the show carries it: IPv4's).
fn neighbors<A: std::fmt::Display>(n: &NeighborsInfo<A>) -> String {
    use Align::{Left as L, Right as R};
    let discarded = n
        .pending_discarded
        .map_or(String::new(), |d| format!(", {d} discarded by control"));
    let head = format!(
        "{} neighbors ({} static, {} learned, {} incomplete; limit {}), {} packets waiting{discarded}; showing {} from {}\n",
        n.total, n.statics, n.learned, n.incomplete, n.limit, n.pending, n.entries.len(), n.offset
    );
    let mut t = Table::new(&[
        ("Interface", L),
        ("IP", L),
        ("MAC", L),
        ("Type", L),
        ("Age s", R),
        ("Pending", R),
    ]);
    for e in &n.entries {
        let kind = match (e.is_static, &e.mac) {
            (true, _) => "static",
            (false, Some(_)) => "learned",
            (false, None) => "incomplete",
        };
        t.row(vec![
            e.interface.clone(),
            e.ip.to_string(),
            e.mac.as_deref().unwrap_or("-").to_string(),
            kind.into(),
            e.age_s.to_string(),
            e.pending.to_string(),
        ]);
    }
    head + &t.render()
}

fn interfaces4(i: &[IpInterfaceInfo]) -> String {
    use Align::Left as L;
    let mut t = Table::new(&[("Interface", L), ("Addresses", L)]);
    for f in i {
        let a: Vec<String> = f.addresses.iter().map(|p| p.to_string()).collect();
        t.row(vec![f.interface.clone(), a.join(", ")]);
    }
    t.render()
}

fn interfaces6(i: &[Ip6InterfaceInfo]) -> String {
    use Align::Left as L;
    let mut t = Table::new(&[("Interface", L), ("Link-local", L), ("Addresses", L)]);
    for f in i {
        let a: Vec<String> = f.addresses.iter().map(|p| p.to_string()).collect();
        t.row(vec![
            f.interface.clone(),
            f.link_local.map_or("-".into(), |l| l.to_string()),
            a.join(", "),
        ]);
    }
    t.render()
}
