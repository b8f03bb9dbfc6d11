//! `nat44-out2in`: the reverse translation of packets arriving on an outside interface for its
//! outside address — an `ip4-unicast` arc feature of the outside interfaces, so the destination
//! is rewritten before `ip4-lookup` routes the packet to the inside host. A packet is translated
//! only when a session matches it exactly (endpoint-dependent filtering, RFC 4787 §5 "address
//! and port-dependent filtering", as VPP's nat44-ed): unsolicited traffic is dropped and counted
//! as `no-session`. ICMP errors about a translated packet are translated with their embedded
//! header. Echo requests to the outside address pass (the switch answers them itself, as
//! `ip4-local` does for its addresses); packets to other addresses pass untouched.
//!
//! Next: the `ip4-unicast` arc (then `ip4-lookup`). Drops: `fragment`, `bad-l4-header`,
//! `unsupported-protocol`, `unsupported-icmp`, `no-session` (no session, or its session expired).
//! Counters: `translated`, `icmp-errors-translated`, `sessions-expired`. Trace: `src S dst D ttl T
//! len L` after the rewrite.
//!
//! The vector is processed in stages ([`super::staged`]), as `nat44-in2out` does.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::in2out::untranslatable;
use super::index::Hashed;
use super::session::{out2in_key, Dir};
use super::staged::{self, First};
use super::translate::{self, Flow, Parsed, Side, TCP};
use crate::ip::IP4_UNICAST_ARC;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "nat44-out2in";

/// Along the `ip4-unicast` arc.
const ON: Next = Next::arc(IP4_UNICAST_ARC);

named_enum! {
    /// Counters of `nat44-out2in`.
    pub enum Counter as counter {
        Translated = "translated",
        IcmpErrorsTranslated = "icmp-errors-translated",
        SessionsExpired = "sessions-expired",
    }
}

/// Drop reasons of `nat44-out2in`: the first five of `nat44-in2out`'s (the same names).
const DROPS: &[&str] = &[
    "fragment",
    "bad-l4-header",
    "unsupported-protocol",
    "unsupported-icmp",
    "no-session",
];

/// The `nat44-out2in` node.
#[derive(Debug, Default)]
pub struct Nat44Out2In;

fn no_session() -> Next {
    super::in2out::DropReason::NoSession.next()
}

/// What pass 1 read of a packet for the outside address `dst`: a flow, or an ICMP error (its
/// header at `icmp_off`) about the flow `f`.
#[derive(Debug, Clone, Copy)]
struct Out {
    off: usize,
    dst: Ipv4Addr,
    f: Flow,
    icmp_off: Option<usize>,
}

/// Pass 1 ([`staged`]): what the packet is and the session key to look up.
#[inline]
fn first(cx: &mut Cx<'_, SwitchState>, h: u32) -> First<Out> {
    let off = cx.pool.header(h).l3_offset as usize;
    let nat = &cx.state.nat44;
    let Some(ip) = cx.pool.data(h).get(off..) else {
        return First::Done(ON);
    };
    let Some(d) = ip.get(16..20) else {
        return First::Done(ON);
    };
    let dst = Ipv4Addr::new(d[0], d[1], d[2], d[3]);
    if !nat.is_outside_addr(dst) {
        return First::Done(ON);
    }
    let (f, icmp_off) = match translate::parse(ip) {
        Err(u) => return First::Done(untranslatable(u).next()),
        // The switch answers echo requests to its own address; a pool address is not its own.
        Ok(Parsed::Flow(f)) if f.is_echo_request() && nat.is_interface_addr(dst) => {
            return First::Done(ON)
        }
        Ok(Parsed::Flow(f)) if f.is_echo_request() => return First::Done(no_session()),
        Ok(Parsed::Flow(f)) => (f, None),
        Ok(Parsed::IcmpError { icmp_off, inner }) => (inner, Some(icmp_off)),
    };
    // The session: for a flow, from its remote source to the outside destination; for an
    // error, the embedded packet went from the outside endpoint to the remote one.
    let key = match icmp_off {
        None => out2in_key(f.proto, f.src, f.sport, f.dst, f.dport),
        Some(_) => out2in_key(f.proto, f.dst, f.dport, f.src, f.sport),
    };
    let dir = Dir::Out2In;
    First::Lookup {
        dir,
        h: nat.sessions.index_for(dir).hashed(key),
        f: Out {
            off,
            dst,
            f,
            icmp_off,
        },
    }
}

/// Pass 4 ([`staged`]): the translation, with `cand` the session passes 2–3 found.
#[inline]
fn body(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    dir: Dir,
    hk: Hashed,
    o: Out,
    cand: Option<u32>,
) -> Next {
    let now = cx.state.rx_ns;
    let nat = &mut cx.state.nat44;
    let Some(i) = nat.sessions.confirm(dir, hk, cand) else {
        return no_session();
    };
    let Some(s) = nat.sessions.get(i).copied() else {
        return no_session();
    };
    if now.saturating_sub(s.last_ns) > nat.timeout_ns(&s) {
        nat.sessions.remove(i);
        nat.sessions.expired += 1;
        cx.counters.add(Counter::SessionsExpired.index(), 1);
        return no_session();
    }
    let Some(ip) = cx.pool.data_mut(h).get_mut(o.off..) else {
        return ON;
    };
    let (f, d_ip, d_l4) = (o.f, !s.d_ip, !s.d_l4);
    match o.icmp_off {
        None => {
            translate::rewrite(ip, &f, Side::Dst, s.key.in_addr, s.key.in_port, d_ip, d_l4);
            if let Some(s) = nat.sessions.get_mut(i) {
                s.last_ns = now;
                s.pkts_out2in += 1;
                if f.proto == TCP {
                    s.tcp_update(f.tcp_flags, true);
                }
            }
            cx.counters.add(Counter::Translated.index(), 1);
        }
        Some(icmp_off) => {
            translate::rewrite_icmp_error(
                ip,
                icmp_off,
                &f,
                Side::Dst,
                s.key.in_addr,
                s.key.in_port,
                super::session::delta(o.dst, s.key.in_addr, 0, 0).0,
                d_ip,
                d_l4,
            );
            cx.counters.add(Counter::IcmpErrorsTranslated.index(), 1);
        }
    }
    ON
}

impl Node<SwitchState> for Nat44Out2In {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            // None: it sends along the `ip4-unicast` arc.
            next_nodes: &[],
            drop_reasons: DROPS,
            counters: Counter::NAMES,
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        staged::run(cx, pkts, nexts, first, body);
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip4_input::trace_ip4(pool, pkt)
    }
}
