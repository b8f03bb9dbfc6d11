//! Setups for the instruction-count example (`examples/nat44_packets.rs`). Not used by the switch
//! itself.
//!
//! [`nat_switch`]: `ip::testing::router_switch` (port `src`, a replay source of 64-byte UDP
//! frames from 10.0.0.2 to `flows` destinations, routed to port `sink`) with `src` an inside
//! interface and `sink` the outside one: every frame is masqueraded by `nat44-in2out`, one
//! session per destination (made by the first frame of each, the rest find it).
//!
//! [`flows_switch`]: the same router, but its source replays `flows` distinct UDP flows to
//! 16.0.0.1 — from [`HOSTS`] inside hosts 10.0.0.2, 10.0.0.3, … and source ports from 1024 up,
//! flow `k` from host `k % HOSTS`, to `remotes` destination ports 2000, 2001, … (flow `k` to
//! `2000 + k % remotes`) — so that any number of flows (up to 16 × 64,512) fits, consecutive
//! frames belong to different flows and every flow recurs once per `flows` frames: the traffic is
//! spread evenly over the flows. [`nat_flows_switch`] puts NAT44 on it (one session per flow)
//! with [`NAT_REMOTES`] remote endpoints: one outside address holds at most 64,512 sessions to
//! one remote endpoint (endpoint-dependent mapping), so 1M sessions need 16 or more.

use std::net::Ipv4Addr;

use vecswitch_ports::loopback::Replay;
use vecswitch_wire::checksum;

use crate::ip::testing::{router_switch, udp_frame64};
use crate::nat44::{Nat44Settings, Role, SessionTable};
use crate::Switch;

/// Hash seed of the session indexes of the benchmark switches.
pub const BENCH_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// UDP idle timeout of the benchmark switches, seconds (a week): the default 300 s is shorter
/// than the warm-up of 1M sessions under callgrind on a loaded host, which expired the sessions
/// the collected packets visit and made them again (docs/NAT.md: the earlier 1M rows were not
/// clean for that reason).
pub const BENCH_UDP_S: u32 = 7 * 24 * 3600;

/// Inside hosts of [`flows_switch`].
pub const HOSTS: u32 = 16;

/// Remote endpoints (destination ports) of [`nat_flows_switch`].
pub const NAT_REMOTES: u32 = 32;

/// See the module doc. `limit`: frames the source hands out in all (`None`: endless).
pub fn nat_switch(flows: u32, limit: Option<u64>) -> Switch {
    nat_on(router_switch(flows, limit), flows)
}

/// Masquerades `src` (inside) behind `sink` (outside) with room for `flows` sessions and a UDP
/// timeout of [`BENCH_UDP_S`].
fn nat_on(mut sw: Switch, flows: u32) -> Switch {
    sw.set_nat44_settings(Nat44Settings {
        max_sessions: flows.max(1) * 2,
        max_sessions_per_host: flows.max(1) * 2,
        udp_s: BENCH_UDP_S,
        ..Default::default()
    })
    .expect("valid settings");
    // A fixed hash seed: the benchmark's cache behaviour is the same in every run.
    sw.state.nat44.sessions = SessionTable::with_seed(BENCH_SEED);
    sw.nat44_set_interface("src", Some(Role::Inside))
        .expect("fresh switch");
    sw.nat44_set_interface("sink", Some(Role::Outside))
        .expect("the sink has an address");
    sw
}

/// The 60-byte frame of flow `k` of [`flows_switch`] with `remotes` destination ports.
pub fn flow_frame(k: u32, remotes: u32) -> Vec<u8> {
    let mut f = udp_frame64(Ipv4Addr::new(16, 0, 0, 1));
    let ip = &mut f[14..];
    ip[12..16].copy_from_slice(&[10, 0, 0, 2 + (k % HOSTS) as u8]);
    ip[20..22].copy_from_slice(&(1024 + (k / HOSTS) as u16).to_be_bytes());
    ip[22..24].copy_from_slice(&(2000 + (k % remotes.max(1)) as u16).to_be_bytes());
    ip[10..12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&ip[..20]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f
}

/// See the module doc (`flows` ≤ 16 × 64,512).
pub fn flows_switch(flows: u32, remotes: u32, limit: Option<u64>) -> Switch {
    let flows = flows.clamp(1, HOSTS * 64_512);
    let mut sw = router_switch(1, Some(0));
    let src = Replay::new(
        "flows",
        (0..flows).map(|k| flow_frame(k, remotes)).collect(),
    )
    .expect("non-empty templates");
    let src = match limit {
        Some(l) => src.with_limit(l),
        None => src,
    };
    // The router's own source hands out nothing (limit 0); this one takes its place.
    sw.delete_port("src").expect("the router's source");
    sw.add_port("src", Box::new(src)).expect("a fresh name");
    sw.ip_add_address("src", "10.0.0.1/24".parse().expect("valid prefix"))
        .expect("a routed port");
    sw
}

/// [`flows_switch`] with NAT44 (`src` inside, `sink` outside) and [`NAT_REMOTES`] remote
/// endpoints: one session per flow.
pub fn nat_flows_switch(flows: u32, limit: Option<u64>) -> Switch {
    nat_on(flows_switch(flows, NAT_REMOTES, limit), flows)
}
