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

use vecswitch_buffer::Pool;
use vecswitch_graph::{named_enum, Cx, Next, Node, NodeInfo};

use super::session::{CreateError, FlowKey};
use super::translate::{self, Parsed, Side, Untranslatable, TCP};
use super::Role;
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

/// The `nat44-in2out` node.
#[derive(Debug, Default)]
pub struct Nat44In2Out;

#[inline]
fn one(cx: &mut Cx<'_, SwitchState>, h: u32) -> Next {
    let hdr = cx.pool.header(h);
    if hdr.ethertype != 0x0800 {
        return TO_OUTPUT;
    }
    let (rx, tx, off) = (hdr.rx_port, hdr.tx_port, hdr.l3_offset as usize);
    let nat = &mut cx.state.nat44;
    if nat.role(rx) != Some(Role::Inside) {
        return TO_OUTPUT;
    }
    let Some(out) = nat.outside_addr(tx) else {
        return TO_OUTPUT;
    };
    let now = cx.state.rx_ns;
    let Some(ip) = cx.pool.data_mut(h).get_mut(off..) else {
        return DropReason::BadL4Header.next();
    };
    match translate::parse(ip) {
        Err(u) => untranslatable(u).next(),
        Ok(Parsed::Flow(f)) => {
            if f.proto == translate::ICMP && !f.is_echo_request() {
                return DropReason::UnsupportedIcmp.next();
            }
            let key = FlowKey {
                proto: f.proto,
                in_addr: f.src,
                in_port: f.sport,
                rem_addr: f.dst,
                rem_port: f.dport,
            };
            let mut idx = nat.sessions.find_in2out(&key);
            if let Some(i) = idx {
                let s = nat.sessions.get(i).copied();
                // A session idle past its timeout is gone even if the sweep has not reached it.
                if s.is_some_and(|s| now.saturating_sub(s.last_ns) > nat.timeout_ns(&s)) {
                    nat.sessions.remove(i);
                    nat.sessions.expired += 1;
                    cx.counters.add(Counter::SessionsExpired.index(), 1);
                    idx = None;
                }
            }
            let i = match idx {
                Some(i) => i,
                None => {
                    let st = nat.settings;
                    match nat.sessions.create(
                        key,
                        out,
                        st.max_sessions,
                        st.max_sessions_per_host,
                        now,
                    ) {
                        Ok(i) => {
                            cx.counters.add(Counter::SessionsCreated.index(), 1);
                            i
                        }
                        Err(CreateError::SessionLimit) => return DropReason::SessionLimit.next(),
                        Err(CreateError::HostLimit) => return DropReason::HostSessionLimit.next(),
                        Err(CreateError::OutOfPorts) => return DropReason::OutOfPorts.next(),
                    }
                }
            };
            let Some(s) = nat.sessions.get_mut(i) else {
                return DropReason::NoSession.next();
            };
            translate::rewrite(ip, &f, Side::Src, s.out_addr, s.out_port, s.d_ip, s.d_l4);
            s.last_ns = now;
            s.pkts_in2out += 1;
            if f.proto == TCP {
                s.tcp_update(f.tcp_flags, false);
            }
            cx.counters.add(Counter::Translated.index(), 1);
            TO_OUTPUT
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
            let Some(s) = nat
                .sessions
                .find_in2out(&key)
                .and_then(|i| nat.sessions.get(i))
            else {
                return DropReason::NoSession.next();
            };
            let outer_src = std::net::Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
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
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            *n = one(cx, h);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        crate::ip::ip4_input::trace_ip4(pool, pkt)
    }
}
