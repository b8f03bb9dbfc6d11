//! `nat44-hairpin`: hairpinning (RFC 4787 §6 REQ-9, RFC 5382 REQ-8 for TCP) — an inside host
//! reaching another inside host through the other's outside address and port. An `ip4-unicast`
//! arc feature of the inside interfaces (after `firewall-input`, so the inside ACL judges what
//! the host sent), enabled on them while `[nat44] hairpinning = true`.
//!
//! A TCP or UDP packet from an inside host to an outside address (an outside interface's
//! address, or a pool address) is translated as if it had left and come back in: its source as
//! `nat44-in2out` would (the sender's session toward that outside endpoint, made if new — REQ-9
//! a, "external source IP address and port"), then its destination as `nat44-out2in` would (the
//! session whose outside endpoint is the destination and whose remote endpoint is the sender's
//! translated source — endpoint-dependent filtering applies as to any packet from outside); then
//! `ip4-lookup` routes it to the inside host. Packets to other addresses, ICMP (echo requests to
//! the switch's own address are answered by it; errors are not hairpinned) and non-IPv4 frames
//! pass untouched.
//!
//! Next: the `ip4-unicast` arc. Drops (the names of `nat44-in2out`'s): `no-session` (no session
//! accepts the translated packet: unsolicited, as from outside; the sender's session stays, as a
//! packet that really left would have made it), `session-limit`, `host-session-limit`,
//! `out-of-ports`, `fragment`, `bad-l4-header`. Counters: `hairpinned`, `sessions-created`,
//! `sessions-expired`. Trace: `src S dst D ttl T len L` after the rewrite.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::in2out::{in2out_touch, untranslatable, DropReason};
use super::session::FlowKey;
use super::translate::{self, Parsed, Side, TCP, UDP};
use super::Role;
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "nat44-hairpin";

/// Along the `ip4-unicast` arc.
const ON: Next = Next::arc(IP4_UNICAST_ARC);

named_enum! {
    /// Counters of `nat44-hairpin`.
    pub enum Counter as counter {
        Hairpinned = "hairpinned",
        SessionsCreated = "sessions-created",
        SessionsExpired = "sessions-expired",
    }
}

/// The `nat44-hairpin` node.
#[derive(Debug, Default)]
pub struct Nat44Hairpin;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let hdr = cx.pool.header(h);
    if hdr.ethertype != 0x0800 {
        return ON;
    }
    let (rx, off) = (hdr.rx_port, hdr.l3_offset as usize);
    let now = cx.state.rx_ns;
    let nat = &mut cx.state.nat44;
    if !nat.hairpinning || nat.role(rx) != Some(Role::Inside) {
        return ON;
    }
    let Some(ip) = cx.pool.data_mut(h).get_mut(off..) else {
        return ON;
    };
    let Some(d) = ip.get(16..20) else {
        return ON;
    };
    let dst = Ipv4Addr::new(d[0], d[1], d[2], d[3]);
    if !nat.is_outside_addr(dst) {
        return ON;
    }
    let f = match translate::parse(ip) {
        Err(u) => return untranslatable(u).next(),
        Ok(Parsed::Flow(f)) if f.proto == TCP || f.proto == UDP => f,
        Ok(_) => return ON,
    };
    // The way out: the sender's session toward the outside endpoint it addressed.
    let key = FlowKey {
        proto: f.proto,
        in_addr: f.src,
        in_port: f.sport,
        rem_addr: dst,
        rem_port: f.dport,
    };
    let out = nat.pool_addr_for(f.src).unwrap_or(dst);
    let found = nat.sessions.find_in2out(&key);
    let sa = match in2out_touch(
        nat,
        &mut cx.counters,
        (key, found, out),
        &f,
        now,
        (
            Counter::SessionsCreated.index(),
            Counter::SessionsExpired.index(),
        ),
    ) {
        Ok(sa) => *sa,
        Err(drop) => return drop,
    };
    // The way back in: the session that accepts a packet from the sender's outside endpoint.
    let Some(b) = nat
        .sessions
        .find_out2in(f.proto, sa.out_addr, sa.out_port, dst, f.dport)
    else {
        return DropReason::NoSession.next();
    };
    let Some(sb) = nat.sessions.get(b).copied() else {
        return DropReason::NoSession.next();
    };
    if now.saturating_sub(sb.last_ns) > nat.timeout_ns(&sb) {
        nat.sessions.remove(b);
        nat.sessions.expired += 1;
        cx.counters.add(Counter::SessionsExpired.index(), 1);
        return DropReason::NoSession.next();
    }
    translate::rewrite(
        ip,
        &f,
        Side::Src,
        sa.out_addr,
        sa.out_port,
        sa.d_ip,
        sa.d_l4,
    );
    translate::rewrite(
        ip,
        &f,
        Side::Dst,
        sb.key.in_addr,
        sb.key.in_port,
        !sb.d_ip,
        !sb.d_l4,
    );
    if let Some(sb) = nat.sessions.get_mut(b) {
        sb.last_ns = now;
        sb.pkts_out2in += 1;
        if f.proto == TCP {
            sb.tcp_update(f.tcp_flags, true);
        }
    }
    cx.counters.add(Counter::Hairpinned.index(), 1);
    ON
}

impl Node<SwitchState> for Nat44Hairpin {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            // None: it sends along the `ip4-unicast` arc.
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip4_input::trace_ip4(pool, pkt)
    }
}
