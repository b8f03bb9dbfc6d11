//! `nat44-in2out`: the masquerade of packets that leave by an outside interface after being
//! received on an inside one — an `interface-output` arc feature of the outside interfaces, so
//! the packet is already routed (as the kernel's masquerade in POSTROUTING). The source becomes
//! the outside interface's address and an outside port of the flow's session (made on the first
//! packet, [`super::session::SessionTable::create`]); an ICMP error an inside host sends about a
//! packet that came through NAT is translated with its embedded header. Packets not received on
//! an inside interface (the switch's own, or outside to outside) and non-IPv4 frames pass as they
//! are.
//!
//! Next: the `interface-output` arc. Drops: `fragment`, `bad-l4-header`,
//! `unsupported-protocol`, `unsupported-icmp` (an ICMP type other than echo request and the
//! errors), `no-session` (an ICMP error about a flow NAT does not know), `session-limit`,
//! `host-session-limit`, `out-of-ports`. Counters: `sessions-created`, `sessions-expired`
//! (idle sessions found expired on lookup and replaced), `translated`, `icmp-errors-translated`.
//! Trace: `src S dst D ttl T len L` after the rewrite.
//!
//! The vector is processed in stages ([`super::staged`]): every packet's session bucket, then
//! every session found, is loaded before the first packet is translated.

use std::net::Ipv4Addr;

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Counters, Cx, Next, Node, NodeInfo};

use super::index::Hashed;
use super::session::{in2out_key, CreateError, Dir, FlowKey, Session};
use super::staged::{self, First};
use super::translate::{self, Flow, Parsed, Side, Untranslatable, TCP};
use super::{Made, Nat44State, Role};
use crate::interface::TO_OUTPUT;
use crate::state::SwitchState;

/// The node's name.
pub const NAME: &str = "nat44-in2out";

named_enum! {
    /// Drop reasons of `nat44-in2out`.
    pub enum DropReason as drop {
        Fragment = "fragment",
        BadL4Header = "bad-l4-header",
        UnsupportedProtocol = "unsupported-protocol",
        UnsupportedIcmp = "unsupported-icmp",
        NoSession = "no-session",
        SessionLimit = "session-limit",
        HostSessionLimit = "host-session-limit",
        OutOfPorts = "out-of-ports",
    }
}
named_enum! {
    /// Counters of `nat44-in2out`.
    pub enum Counter as counter {
        SessionsCreated = "sessions-created",
        SessionsExpired = "sessions-expired",
        Translated = "translated",
        IcmpErrorsTranslated = "icmp-errors-translated",
    }
}

/// The reason a packet NAT cannot translate is dropped for (shared with `nat44-out2in`, whose
/// first four drop reasons are the same).
pub(crate) fn untranslatable(u: Untranslatable) -> DropReason {
    match u {
        Untranslatable::Fragment => DropReason::Fragment,
        Untranslatable::BadL4Header => DropReason::BadL4Header,
        Untranslatable::UnsupportedProtocol => DropReason::UnsupportedProtocol,
        Untranslatable::UnsupportedIcmp => DropReason::UnsupportedIcmp,
    }
}

/// The slot of the session [`super::Nat44State::in2out_session`] found or made, counting on the
/// calling node's counters `created` and `expired` what it did; or the drop for why no session
/// could be made.
#[inline(always)]
fn session_or_drop(
    counters: &mut Counters<'_>,
    made: Result<Made, CreateError>,
    created: u16,
    expired: u16,
) -> Result<u32, Next> {
    match made {
        Ok(m) => {
            if m.created {
                counters.add(created, 1);
            }
            if m.expired {
                counters.add(expired, 1);
            }
            Ok(m.slot)
        }
        Err(CreateError::SessionLimit) => Err(DropReason::SessionLimit.next()),
        Err(CreateError::HostLimit) => Err(DropReason::HostSessionLimit.next()),
        Err(CreateError::OutOfPorts) => Err(DropReason::OutOfPorts.next()),
    }
}

/// The in2out half of a packet from an inside host, shared by `nat44-in2out` and
/// `nat44-hairpin`: the session of `key` that the lookup found (`found`) or a new one behind
/// `out` ([`super::Nat44State::in2out_session`]), what that did counted on the calling node's
/// counters `(created, expired)`, and the session touched by flow `f` — its time, its in2out
/// packet count and (TCP) its state. The session, or the drop for why none could be made.
#[inline(always)]
pub(crate) fn in2out_touch<'n>(
    nat: &'n mut Nat44State,
    counters: &mut Counters<'_>,
    (key, found, out): (FlowKey, Option<u32>, Ipv4Addr),
    f: &Flow,
    now: u64,
    (created, expired): (u16, u16),
) -> Result<&'n mut Session, Next> {
    let made = nat.in2out_session(key, found, out, now);
    let i = session_or_drop(counters, made, created, expired)?;
    let Some(s) = nat.sessions.get_mut(i) else {
        return Err(DropReason::NoSession.next());
    };
    s.last_ns = now;
    s.pkts_in2out += 1;
    if f.proto == TCP {
        s.tcp_update(f.tcp_flags, false);
    }
    Ok(s)
}

/// The `nat44-in2out` node.
#[derive(Debug, Default)]
pub struct Nat44In2Out;

/// What pass 1 read of a packet to translate.
#[derive(Debug, Clone, Copy)]
enum In {
    /// A flow from the inside host of `key`, to leave behind outside address `out`.
    Flow {
        off: usize,
        f: Flow,
        key: FlowKey,
        out: Ipv4Addr,
    },
    /// An ICMP error about `inner`, a packet of the session of `key` sent to the inside host.
    Error {
        off: usize,
        icmp_off: usize,
        inner: Flow,
    },
}

/// Pass 1 ([`staged`]): what the packet is and the session key to look up.
#[inline]
fn first(cx: &mut Cx<'_, SwitchState>, h: u32) -> First<In> {
    let hdr = cx.pool.header(h);
    if hdr.ethertype != 0x0800 {
        return First::Done(TO_OUTPUT);
    }
    let (rx, tx, off) = (hdr.rx_port, hdr.tx_port, hdr.l3_offset as usize);
    let nat = &cx.state.nat44;
    if nat.role(rx) != Some(Role::Inside) {
        return First::Done(TO_OUTPUT);
    }
    let Some(own) = nat.outside_addr(tx) else {
        return First::Done(TO_OUTPUT);
    };
    let Some(ip) = cx.pool.data(h).get(off..) else {
        return First::Done(DropReason::BadL4Header.next());
    };
    let (key, f) = match translate::parse(ip) {
        Err(u) => return First::Done(untranslatable(u).next()),
        Ok(Parsed::Flow(f)) => {
            if f.proto == translate::ICMP && !f.is_echo_request() {
                return First::Done(DropReason::UnsupportedIcmp.next());
            }
            let key = FlowKey {
                proto: f.proto,
                in_addr: f.src,
                in_port: f.sport,
                rem_addr: f.dst,
                rem_port: f.dport,
            };
            // The host's pool address, or the interface's own (masquerade).
            let out = nat.pool_addr_for(f.src).unwrap_or(own);
            (key, In::Flow { off, f, key, out })
        }
        Ok(Parsed::IcmpError { icmp_off, inner }) => {
            // The embedded packet went from the remote endpoint to the inside host.
            let key = FlowKey {
                proto: inner.proto,
                in_addr: inner.dst,
                in_port: inner.dport,
                rem_addr: inner.src,
                rem_port: inner.sport,
            };
            (
                key,
                In::Error {
                    off,
                    icmp_off,
                    inner,
                },
            )
        }
    };
    let dir = Dir::In2Out;
    First::Lookup {
        dir,
        h: nat.sessions.index_for(dir).hashed(in2out_key(&key)),
        f,
    }
}

/// Pass 4 ([`staged`]): the translation, with `cand` the session passes 2–3 found.
#[inline]
fn body(
    cx: &mut Cx<'_, SwitchState>,
    h: u32,
    dir: Dir,
    hk: Hashed,
    f: In,
    cand: Option<u32>,
) -> Next {
    let now = cx.state.rx_ns;
    let nat = &mut cx.state.nat44;
    let idx = nat.sessions.confirm(dir, hk, cand);
    match f {
        In::Flow { off, f, key, out } => {
            let s = match in2out_touch(
                nat,
                &mut cx.counters,
                (key, idx, out),
                &f,
                now,
                (
                    Counter::SessionsCreated.index(),
                    Counter::SessionsExpired.index(),
                ),
            ) {
                Ok(s) => s,
                Err(drop) => return drop,
            };
            let Some(ip) = cx.pool.data_mut(h).get_mut(off..) else {
                return DropReason::BadL4Header.next();
            };
            translate::rewrite(ip, &f, Side::Src, s.out_addr, s.out_port, s.d_ip, s.d_l4);
            cx.counters.add(Counter::Translated.index(), 1);
            TO_OUTPUT
        }
        In::Error {
            off,
            icmp_off,
            inner,
        } => {
            let Some(s) = idx.and_then(|i| nat.sessions.get(i)) else {
                return DropReason::NoSession.next();
            };
            let Some(ip) = cx.pool.data_mut(h).get_mut(off..) else {
                return DropReason::BadL4Header.next();
            };
            let outer_src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
            let (d_outer, _) = super::session::delta(outer_src, s.out_addr, 0, 0);
            translate::rewrite_icmp_error(
                ip,
                icmp_off,
                &inner,
                Side::Src,
                s.out_addr,
                s.out_port,
                d_outer,
                s.d_ip,
                s.d_l4,
            );
            cx.counters.add(Counter::IcmpErrorsTranslated.index(), 1);
            TO_OUTPUT
        }
    }
}

impl Node<SwitchState> for Nat44In2Out {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: NAME,
            // None: it sends along the output arc.
            next_nodes: &[],
            drop_reasons: DropReason::NAMES,
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
