//! Setups for the IP benchmarks (`benches/ip4.rs`) and the instruction-count examples
//! (`examples/ip4_packets.rs`, `examples/ip6_packets.rs`, both [`packets_main`]). Not used by
//! the switch itself.
//!
//! [`router_switch`]: port `src` (a `loopback::Replay` source of 64-byte IPv4/UDP frames, 60
//! bytes without FCS as RFC 2544 §9 counts them) routed to port `sink` through `routes` /24
//! routes (16.0.0.0/24, 16.0.1.0/24, …) via one static neighbour; the frames' destinations are
//! spread evenly over the routes (one per route up to [`TEMPLATES`] routes), so that every frame
//! is a FIB hit forwarded with a MAC rewrite and a TTL decrement.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::process::ExitCode;

use vecswitch_ports::loopback::Replay;
use vecswitch_wire::{checksum, EthernetAddress};

use super::{Ipv4Prefix, Ipv6Prefix};
use crate::{Switch, SwitchConfig};

/// Templates the source replays: at most this many distinct frames.
pub const TEMPLATES: u32 = 16_384;

/// The next hop's MAC (the sink side).
pub const NEXT_HOP_MAC: [u8; 6] = [0x02, 0x5e, 0, 0, 0, 0x0b];

/// A 60-byte IPv4/UDP frame from 10.0.0.2 to `dst`, to the MAC of the switch's port 0.
pub fn udp_frame64(dst: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x02, 0xfe, 0, 0, 0, 0]);
    f[6..12].copy_from_slice(&[0x02, 0x5e, 0, 0, 0, 0x0a]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&46u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, 2]);
    ip[16..20].copy_from_slice(&dst.octets());
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip[20..22].copy_from_slice(&1000u16.to_be_bytes());
    ip[22..24].copy_from_slice(&2000u16.to_be_bytes());
    ip[24..26].copy_from_slice(&26u16.to_be_bytes());
    f
}

/// See the module doc. `limit`: frames the source hands out in all (`None`: endless).
pub fn router_switch(routes: u32, limit: Option<u64>) -> Switch {
    let routes = routes.max(1);
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let route = |i: u32| Ipv4Addr::from((16u32 << 24) + (i << 8));
    let n = routes.min(TEMPLATES);
    let stride = routes / n;
    let templates: Vec<Vec<u8>> = (0..n)
        .map(|k| udp_frame64(Ipv4Addr::from(u32::from(route(k * stride)) + 1)))
        .collect();
    let src = Replay::new("src", templates).expect("non-empty templates");
    let src = match limit {
        Some(l) => src.with_limit(l),
        None => src,
    };
    let sink = Replay::new("sink", vec![udp_frame64(Ipv4Addr::new(10, 0, 0, 2))])
        .expect("non-empty templates")
        .with_limit(0);
    sw.add_port("src", Box::new(src)).expect("fresh switch");
    sw.add_port("sink", Box::new(sink)).expect("fresh switch");
    let p = |s: &str| s.parse::<Ipv4Prefix>().expect("valid prefix");
    sw.ip_add_address("src", p("10.0.0.1/24"))
        .expect("fresh switch");
    sw.ip_add_address("sink", p("10.1.0.1/24"))
        .expect("fresh switch");
    let nh = Ipv4Addr::new(10, 1, 0, 2);
    sw.ip_add_neighbor("sink", nh, EthernetAddress(NEXT_HOP_MAC))
        .expect("in the subnet");
    let table: Vec<(Ipv4Prefix, Vec<Ipv4Addr>)> = (0..routes)
        .map(|i| {
            (
                Ipv4Prefix {
                    addr: route(i),
                    len: 24,
                },
                vec![nh],
            )
        })
        .collect();
    sw.ip_add_routes(0, &table).expect("valid routes");
    sw
}

/// A 74-byte IPv6/UDP frame (78 bytes with the FCS, the smallest IPv6 test frame of RFC 5180 §5.1)
/// from 2001:db8::2 to `dst`, to the MAC of the switch's port 0 (UDP checksum left 0: the switch
/// does not read it).
pub fn udp6_frame78(dst: Ipv6Addr) -> Vec<u8> {
    let mut f = vec![0u8; 74];
    f[..6].copy_from_slice(&[0x02, 0xfe, 0, 0, 0, 0]);
    f[6..12].copy_from_slice(&[0x02, 0x5e, 0, 0, 0, 0x0a]);
    f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
    let ip = &mut f[14..];
    ip[0] = 0x60;
    ip[4..6].copy_from_slice(&20u16.to_be_bytes());
    ip[6] = 17;
    ip[7] = 64;
    ip[8..24].copy_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).octets());
    ip[24..40].copy_from_slice(&dst.octets());
    ip[40..42].copy_from_slice(&1000u16.to_be_bytes());
    ip[42..44].copy_from_slice(&2000u16.to_be_bytes());
    ip[44..46].copy_from_slice(&20u16.to_be_bytes());
    f
}

/// [`router_switch`] for IPv6: `routes` /48 routes (2400::/48, 2400:0:1::/48, …) via one static
/// neighbour on `sink`, the source's destinations (`::1` of a route) spread evenly over them.
pub fn router6_switch(routes: u32, limit: Option<u64>) -> Switch {
    let routes = routes.max(1);
    let mut sw = Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: 1024,
        ..Default::default()
    });
    let route = |i: u32| Ipv6Addr::from((0x2400_0000_0000u128 + i as u128) << 80);
    let n = routes.min(TEMPLATES);
    let stride = routes / n;
    let templates: Vec<Vec<u8>> = (0..n)
        .map(|k| udp6_frame78(Ipv6Addr::from(u128::from(route(k * stride)) + 1)))
        .collect();
    let src = Replay::new("src", templates).expect("non-empty templates");
    let src = match limit {
        Some(l) => src.with_limit(l),
        None => src,
    };
    let sink = Replay::new("sink", vec![udp6_frame78(Ipv6Addr::LOCALHOST)])
        .expect("non-empty templates")
        .with_limit(0);
    sw.add_port("src", Box::new(src)).expect("fresh switch");
    sw.add_port("sink", Box::new(sink)).expect("fresh switch");
    let p = |s: &str| s.parse::<Ipv6Prefix>().expect("valid prefix");
    sw.ip6_add_address("src", p("2001:db8::1/64"))
        .expect("fresh switch");
    sw.ip6_add_address("sink", p("2001:db8:1::1/64"))
        .expect("fresh switch");
    let nh = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2);
    sw.ip6_add_neighbor("sink", nh, EthernetAddress(NEXT_HOP_MAC))
        .expect("in the subnet");
    let table: Vec<(Ipv6Prefix, Vec<Ipv6Addr>)> = (0..routes)
        .map(|i| {
            (
                Ipv6Prefix {
                    addr: route(i),
                    len: 48,
                },
                vec![nh],
            )
        })
        .collect();
    sw.ip6_add_routes(0, &table).expect("valid routes");
    sw
}

/// Polls until the source has handed out all its packets; returns how many were received. The
/// examples count the instructions of this function only (`--toggle-collect='*run_packets*'`).
#[inline(never)]
pub fn run_packets(sw: &mut Switch) -> u64 {
    let mut total = 0u64;
    loop {
        let n = sw.poll_once();
        if n == 0 {
            return total;
        }
        total += n as u64;
    }
}

fn usage(name: &str, msg: &str) -> ExitCode {
    eprintln!("{msg}\nusage: {name} [ROUTES] [K]\n       {name} interleave [ROUNDS]");
    ExitCode::from(2)
}

/// Route counts of the interleaved comparison (issue 10's benchmark sizes).
pub const INTERLEAVE_ROUTES: [u32; 5] = [1, 2_000, 20_000, 200_000, 1_000_000];

/// `{name} interleave [ROUNDS]` (default 100): `setup` with each of [`INTERLEAVE_ROUTES`] built
/// in one process, then timed in turn per round ([`crate::testing::interleave`]); rates relative
/// to 1 route.
fn interleave_main(
    name: &str,
    setup: fn(u32, Option<u64>) -> Switch,
    rounds: Option<&String>,
) -> ExitCode {
    let rounds = match rounds.map(|s| s.parse::<usize>()) {
        None => 100,
        Some(Ok(r)) if r > 0 => r,
        _ => {
            return usage(
                name,
                &format!("invalid ROUNDS {rounds:?}: accepted a whole number above 0"),
            )
        }
    };
    let mut cases: Vec<(String, Switch)> = INTERLEAVE_ROUTES
        .iter()
        .map(|&r| (format!("routes/{r}"), setup(r, None)))
        .collect();
    match crate::testing::interleave(&mut cases, rounds, 0) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// The `main` of the instruction-count examples `name` (`ip4_packets`, `ip6_packets`):
/// arguments `ROUTES` (default 1) and `K` (packets, default 100000); builds `setup(ROUTES, K +
/// one warm-up vector)`, runs one vector outside the collected function, then [`run_packets`],
/// and checks that exactly K packets were received and sent and no buffer is left in use.
/// `interleave [ROUNDS]` measures wall clock instead, interleaved over [`INTERLEAVE_ROUTES`].
pub fn packets_main(name: &str, setup: fn(u32, Option<u64>) -> Switch) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("interleave") {
        return interleave_main(name, setup, args.get(1));
    }
    let routes: u32 = match args.first().map(|s| s.parse()) {
        None => 1,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(
                name,
                &format!(
                    "invalid ROUTES {:?}: accepted a whole number above 0",
                    args[0]
                ),
            )
        }
    };
    let k: u64 = match args.get(1).map(|s| s.parse()) {
        None => 100_000,
        Some(Ok(v)) if v > 0 => v,
        _ => {
            return usage(
                name,
                &format!("invalid K {:?}: accepted a whole number above 0", args[1]),
            )
        }
    };
    // One vector first, outside the collected function: the first allocations after building a
    // large table make glibc consolidate the chunks the build freed (tens of millions of
    // instructions once), which is setup, not per-packet cost.
    const WARM: u64 = 256;
    let mut sw = setup(routes, Some(k + WARM));
    let warm = sw.poll_once() as u64;
    let t0 = std::time::Instant::now();
    let got = run_packets(&mut sw);
    let ns = t0.elapsed().as_nanos() as f64 / got.max(1) as f64;
    let sent: u64 = sw
        .show_ports()
        .iter()
        .map(|p| p.stats.tx_packets)
        .sum::<u64>()
        - warm;
    // Wall-clock time is only indicative (other processes share the CPU); count instructions.
    println!("routes={routes} packets={got} sent={sent} wall_ns_per_packet={ns:.1}");
    if warm != WARM || got != k || sent != k || sw.show_buffers().in_use != 0 {
        eprintln!(
            "expected {k} packets received and sent and no buffer in use; errors: {:?}",
            sw.show_errors()
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
