//! The IP plan of a chain with routed VNFs (seed 004's vRouter and vFirewall; issue 12).
//!
//! A routed VNF ([`is_routed`]: `kernel-router`, `kernel-router-nat`, `kernel-firewall`,
//! `vecswitch-router-nat`, `vecswitch-firewall`) is one IP hop. A chain with `n` hops has
//! `n + 1` subnets, numbered from the client's side: subnet `i` is `10.12.i.0/24` and
//! `fd12:i::/64` ([`subnet`]). Hop `j` (the `j`-th routed VNF, from 0) holds `.254` (`::fe`) of
//! subnet `j + 1` on its left port and, on its right port, `.254` of subnet `j + 2` when it is
//! the last hop (the server's gateway) or `.253` (`::fd`) when another hop follows (whose left
//! port holds that subnet's `.254`). Each hop routes the subnets beyond its neighbours through
//! them ([`Hop::routes`]).
//!
//! The client is `.1` of subnet 1 (gateway: hop 0's left address), the server `.1` of subnet
//! `n + 1` (gateway: the last hop's right address); with one hop this is the plan of the single
//! kernel router ([`super::ROUTER_LEFT`], [`super::ROUTER_RIGHT`]). The server also holds
//! [`denied_target`], inside the range the firewall policy denies ([`super::policy`]). The
//! built-in tester sends from [`TESTER_SOURCE`] to [`tester_sink`] (`.100` of the end subnets).

use crate::topology::VnfKind;

/// Whether VNF `kind` routes (one IP hop) rather than bridges or cross-connects.
pub fn is_routed(kind: &VnfKind) -> bool {
    matches!(
        kind,
        VnfKind::KernelRouter
            | VnfKind::KernelRouterNat
            | VnfKind::KernelFirewall
            | VnfKind::VecswitchRouterNat { .. }
            | VnfKind::VecswitchFirewall { .. }
    )
}

/// Whether VNF `kind` filters by the seed-004 policy.
pub fn is_firewall(kind: &VnfKind) -> bool {
    matches!(
        kind,
        VnfKind::KernelFirewall | VnfKind::VecswitchFirewall { .. }
    )
}

/// How many routed VNFs `vnfs` holds.
pub fn hops(vnfs: &[VnfKind]) -> usize {
    vnfs.iter().filter(|v| is_routed(v)).count()
}

/// The hop index of VNF `k` of `vnfs` (None if it does not route).
pub fn hop_index(vnfs: &[VnfKind], k: usize) -> Option<usize> {
    is_routed(vnfs.get(k)?).then(|| hops(&vnfs[..k]))
}

/// Host `host` of subnet `i` as `[IPv4/24, IPv6/64]`.
pub fn subnet(i: usize, host: u8) -> [String; 2] {
    [
        format!("10.12.{i}.{host}/24"),
        format!("fd12:{i:x}::{host:x}/64"),
    ]
}

/// The network prefixes of subnet `i`, `[IPv4, IPv6]`.
pub fn network(i: usize) -> [String; 2] {
    [format!("10.12.{i}.0/24"), format!("fd12:{i:x}::/64")]
}

/// An address without its prefix length.
pub fn bare(a: &str) -> &str {
    a.split('/').next().unwrap_or(a)
}

/// One routed VNF's addresses and routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// Left (client side) port: `[IPv4/len, IPv6/len]`.
    pub left: [String; 2],
    /// Right (server side) port.
    pub right: [String; 2],
    /// `(prefix, next hop)` for the subnets not attached to this hop, both families.
    pub routes: Vec<(String, String)>,
}

/// Hop `j` of `n`.
pub fn hop(j: usize, n: usize) -> Hop {
    let last = j + 1 == n;
    let left = subnet(j + 1, 254);
    let right = subnet(j + 2, if last { 254 } else { 253 });
    let mut routes = Vec::new();
    // Subnets left of the left one: through the previous hop's right address (.253).
    for s in 1..=j {
        for (net, via) in network(s).into_iter().zip(subnet(j + 1, 253)) {
            routes.push((net, bare(&via).to_string()));
        }
    }
    // Subnets right of the right one: through the next hop's left address (.254).
    for s in j + 3..=n + 1 {
        for (net, via) in network(s).into_iter().zip(subnet(j + 2, 254)) {
            routes.push((net, bare(&via).to_string()));
        }
    }
    Hop {
        left,
        right,
        routes,
    }
}

/// The client's and the server's addresses and gateways for a chain of `n` hops:
/// `(client, server, client gateway, server gateway)`; no gateways for `n = 0` (one subnet:
/// client `.1`, server `.2`).
#[allow(clippy::type_complexity)]
pub fn endpoints(
    n: usize,
) -> (
    [String; 2],
    [String; 2],
    Option<[String; 2]>,
    Option<[String; 2]>,
) {
    if n == 0 {
        return (subnet(1, 1), subnet(1, 2), None, None);
    }
    (
        subnet(1, 1),
        subnet(server_subnet(n), 1),
        Some(hop(0, n).left),
        Some(hop(n - 1, n).right),
    )
}

/// The server's extra address inside the denied range (`.170` of the server's subnet, in
/// `.160/27`; `::aa` in `::a0/123`), as `[IPv4/32, IPv6/128]`.
pub fn denied_target(n: usize) -> [String; 2] {
    let s = server_subnet(n);
    [format!("10.12.{s}.170/32"), format!("fd12:{s:x}::aa/128")]
}

/// The range the policy denies around [`denied_target`], `[IPv4, IPv6]`.
pub fn denied_range(n: usize) -> [String; 2] {
    let s = server_subnet(n);
    [format!("10.12.{s}.160/27"), format!("fd12:{s:x}::a0/123")]
}

/// The built-in tester's source address (`.100` of the client's subnet), IPv4 (seed 004's
/// "built-in performance testing": the generator attached to the chain by memif sends RFC 2544
/// traffic through the hops, [`super::tester_streams`]).
pub const TESTER_SOURCE: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 12, 1, 100);

/// The built-in tester's sink address (`.100` of the server's subnet), IPv4. The last hop holds
/// a static neighbour for it (the generator does not answer ARP), the first hop one for
/// [`TESTER_SOURCE`]; the L7 endpoints never use either address.
pub fn tester_sink(n: usize) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::new(10, 12, server_subnet(n) as u8, 100)
}

/// The server's subnet in a chain of `n` hops.
pub fn server_subnet(n: usize) -> usize {
    n + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hop_is_the_single_router_plan() {
        let h = hop(0, 1);
        assert_eq!(h.left, super::super::ROUTER_LEFT.map(String::from));
        assert_eq!(h.right, super::super::ROUTER_RIGHT.map(String::from));
        assert!(h.routes.is_empty());
        let (c, s, cg, sg) = endpoints(1);
        assert_eq!(c[0], "10.12.1.1/24");
        assert_eq!(s[1], "fd12:2::1/64");
        assert_eq!(cg.unwrap()[0], "10.12.1.254/24");
        assert_eq!(sg.unwrap()[1], "fd12:2::fe/64");
        assert_eq!(denied_target(1)[0], "10.12.2.170/32");
        assert_eq!(denied_range(0)[0], "10.12.1.160/27");
        assert_eq!(denied_target(0)[1], "fd12:1::aa/128");
        // The tester's addresses: in the end subnets, outside every denied range.
        assert_eq!(TESTER_SOURCE.to_string(), "10.12.1.100");
        assert_eq!(tester_sink(2).to_string(), "10.12.3.100");
    }

    #[test]
    fn three_hops_route_through_their_neighbours() {
        let n = 3;
        let h: Vec<Hop> = (0..n).map(|j| hop(j, n)).collect();
        // Adjacent hops share a subnet: .253 on the left hop's right, .254 on the right one's left.
        assert_eq!(h[0].right[0], "10.12.2.253/24");
        assert_eq!(h[1].left[0], "10.12.2.254/24");
        assert_eq!(h[2].right[0], "10.12.4.254/24");
        // Hop 0 reaches subnets 3, 4 through hop 1's left; hop 2 reaches 1, 2 through hop 1's right.
        assert_eq!(
            h[0].routes,
            vec![
                ("10.12.3.0/24".to_string(), "10.12.2.254".to_string()),
                ("fd12:3::/64".into(), "fd12:2::fe".into()),
                ("10.12.4.0/24".into(), "10.12.2.254".into()),
                ("fd12:4::/64".into(), "fd12:2::fe".into()),
            ]
        );
        assert_eq!(
            h[2].routes[0],
            ("10.12.1.0/24".into(), "10.12.3.253".into())
        );
        assert_eq!(h[2].routes.len(), 4);
        assert_eq!(h[1].routes.len(), 4);
        let v = [
            VnfKind::KernelBridge,
            VnfKind::KernelRouterNat,
            VnfKind::TestpmdIo,
            VnfKind::KernelFirewall,
        ];
        assert_eq!(hops(&v), 2);
        assert_eq!(hop_index(&v, 1), Some(0));
        assert_eq!(hop_index(&v, 2), None);
        assert_eq!(hop_index(&v, 3), Some(1));
    }
}
