//! `ethernet-input`: the first L2 node of every received frame (after `interface-rx` and the input arc). It validates the L2 header once with
//! `wire::L2Header::parse` (addresses, up to two VLAN tags — IEEE 802.1Q-2018 §9.6 — and the final
//! type/length, IEEE 802.3 §3.2.6), records what later nodes need in the buffer header (`l3_offset`,
//! `vlan`, `inner_vlan`, `ethertype`, and `bd` for bridge members), and classifies the frame by its
//! receive interface's service.
//!
//! On an interface with VLAN sub-interfaces (`crate::vlan`) it first finds the one the parsed tags
//! belong to (`vlan::ParentTable::classify`, VPP's order; VPP does this in its `ethernet-input`
//! too, `eth_identify_subint`), once per run of frames with the same receive interface and tags;
//! the frame becomes the sub-interface's (`rx_port`, its `rx_packets`/`rx_bytes`), gets its
//! ingress tag rewrite (`vlan::move_tags`) and goes to the sub-interface's service, with the
//! header fields describing the tags it has after the rewrite. The receive interface (its state,
//! service, MTU and sub-interface table) is looked up once per run of frames from it, the
//! sub-interface verdict once per run of frames from it with the same tags; a switch without
//! sub-interfaces pays one check per vector for them.
//!
//! Next edges: `l2-xconnect`, `l2-learn` (bridge that learns), `l2-fwd` (bridge that does not),
//! `ip4-input` / `arp-input` / `ip6-input` (untagged IPv4 / ARP on an interface with an IPv4
//! address, IPv6 on one with an IPv6 address, and no L2 service; unicast frames to another MAC are
//! dropped as `l3-mac-mismatch`).
//! Drops: `admin-down` (receive interface administratively down), `no-service` (interface has no
//! service, or is gone),
//! `no-bridge` (bridge gone; a bug guard), and the wire errors by name: `runt`, `truncated-vlan-tag`,
//! `too-many-vlan-tags` (also: a rewrite that would leave three), `bad-length-field`, and
//! `malformed` for any other parse error; `unknown-vlan` (tags no sub-interface of the receive
//! interface takes, and the main interface does not), `no-headroom` (no room for pushed tags).
//! The input hygiene of `crate::l2::hygiene`: `src-mac-multicast`, `src-mac-zero`, `over-mtu`
//! (receive interface's MTU); 14–59-byte frames are forwarded (the runt policy there).
//! Trace: `ethertype 0x0800 vlan V/I l3-offset N rx-port P`.

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};
use vecswitch_wire::{Error as WireError, L2Header};

use vecswitch_graph::named_enum;

use super::{Interface, Service, SwIfIdx};
use crate::ip::{IpState, L3Input};
use crate::l2::{hygiene, Bridge};
use crate::state::SwitchState;
use crate::vlan::{move_tags, CounterRun, ParentTable, RewriteError, TagKey, VlanState, Vtr};

named_enum! {
    /// Next edges of `ethernet-input`.
    pub enum Edge as edge {
        L2Xconnect = "l2-xconnect",
        L2Learn = "l2-learn",
        L2Fwd = "l2-fwd",
        Ip4Input = "ip4-input",
        ArpInput = "arp-input",
        Ip6Input = "ip6-input",
    }
}
named_enum! {
    /// Drop reasons of `ethernet-input`.
    pub enum DropReason as drop {
        AdminDown = "admin-down",
        NoService = "no-service",
        NoBridge = "no-bridge",
        Runt = "runt",
        TruncatedVlanTag = "truncated-vlan-tag",
        TooManyVlanTags = "too-many-vlan-tags",
        BadLengthField = "bad-length-field",
        Malformed = "malformed",
        L3MacMismatch = "l3-mac-mismatch",
        UnknownVlan = "unknown-vlan",
        NoHeadroom = "no-headroom",
        SrcMacMulticast = "src-mac-multicast",
        SrcMacZero = "src-mac-zero",
        OverMtu = "over-mtu",
    }
}

impl DropReason {
    /// The drop reason for a wire parse error (named as `wire::Error::reason` names it).
    pub fn from_wire(e: &WireError) -> DropReason {
        match e {
            WireError::Runt { .. } => DropReason::Runt,
            WireError::TruncatedVlanTag { .. } => DropReason::TruncatedVlanTag,
            WireError::TooManyVlanTags { .. } => DropReason::TooManyVlanTags,
            WireError::BadLengthField { .. } => DropReason::BadLengthField,
            _ => DropReason::Malformed,
        }
    }
}

/// The `ethernet-input` node.
#[derive(Debug, Default)]
pub struct EthernetInput;

/// What `ethernet-input` reads and writes besides the packets: the switch state's fields, split so
/// that the tables read (sub-interfaces, bridges, IP) and the interface counters written can be
/// held at once.
struct Tables<'a> {
    pool: &'a mut Pool,
    interfaces: &'a mut [Option<Interface>],
    vlan: &'a VlanState,
    ip: &'a IpState,
    bridges: &'a [Option<Bridge>],
}

/// The receive interface of a run of frames, looked up once per run (frames arrive in runs from
/// one port: `interface-rx` hands over one `rx_burst` after another).
#[derive(Clone, Copy)]
struct RxIf<'a> {
    rx: SwIfIdx,
    /// Its admin state, service, MAC and MTU; `None` when it is gone.
    iface: Option<IfView>,
    /// Its sub-interface table and whether its main interface is in L2 mode, when it has live
    /// sub-interfaces (`VlanState::live_parent`); `None` also in a switch without any.
    parent: Option<(&'a ParentTable, bool)>,
}

#[derive(Clone, Copy)]
struct IfView {
    admin_up: bool,
    service: Service,
    mtu: u16,
}

impl<'a> RxIf<'a> {
    #[inline]
    fn of(
        interfaces: &[Option<Interface>],
        vlan: &'a VlanState,
        any_parent: bool,
        rx: SwIfIdx,
    ) -> RxIf<'a> {
        let iface = interfaces
            .get(rx as usize)
            .and_then(Option::as_ref)
            .map(|i| IfView {
                admin_up: i.admin_up,
                service: i.service,
                mtu: i.mtu,
            });
        let parent = if any_parent {
            vlan.live_parent(interfaces, rx)
        } else {
            None
        };
        RxIf { rx, iface, parent }
    }
}

/// What frames from one receive interface with one set of tags are, decided once per run of such
/// frames (VPP's `ethernet-input` caches its last sub-interface match the same way).
#[derive(Clone, Copy)]
struct Classified {
    rx: SwIfIdx,
    key: TagKey,
    verdict: Verdict,
}

#[derive(Clone, Copy)]
enum Verdict {
    /// The receive interface's own (none of its sub-interfaces takes these tags).
    Main,
    Drop(DropReason),
    /// Sub-interface `sw`'s, with its ingress rewrite and the tags the frame has after it.
    Sub {
        sw: SwIfIdx,
        admin_up: bool,
        service: Service,
        vtr: Vtr,
        after: Result<TagKey, RewriteError>,
    },
}

/// Sub-interface classification of a frame with tags `key` received on `rx`, whose table is
/// `table`, in VPP's order (`ParentTable::classify`).
fn classify(
    t: &Tables<'_>,
    table: &ParentTable,
    main_l2: bool,
    rx: SwIfIdx,
    key: TagKey,
) -> Verdict {
    match table.classify(key, rx, main_l2) {
        None => Verdict::Drop(DropReason::UnknownVlan),
        Some(sw) if sw == rx => Verdict::Main,
        Some(sw) => match t.interfaces.get(sw as usize).and_then(Option::as_ref) {
            None => Verdict::Drop(DropReason::NoService),
            Some(i) => {
                let vtr = t.vlan.sub(sw).map_or(Vtr::NONE, |s| s.ingress);
                Verdict::Sub {
                    sw,
                    admin_up: i.admin_up,
                    service: i.service,
                    vtr,
                    after: vtr.key_after(key),
                }
            }
        },
    }
}

/// One frame `h` received on `r`; `last` and `counters` carry the run of frames alike. `VLAN`:
/// some interface has sub-interfaces (a switch without any runs none of their code).
#[inline(always)]
fn one<const VLAN: bool>(
    t: &mut Tables<'_>,
    r: &RxIf<'_>,
    h: u32,
    last: &mut Option<Classified>,
    counters: &mut CounterRun,
) -> Next {
    let Some(ifv) = r.iface else {
        return DropReason::NoService.next();
    };
    if !ifv.admin_up {
        return DropReason::AdminDown.next();
    }
    let (mut service, mut rx) = (ifv.service, r.rx);
    let l2 = match L2Header::parse(t.pool.data(h)) {
        Ok(l2) => l2,
        Err(e) => return DropReason::from_wire(&e).next(),
    };
    // Input hygiene on the frame as received (tags do not count against the MTU).
    let total_len = t.pool.header(h).total_len;
    match hygiene::check(&l2.src_addr, total_len, l2.l3_offset, ifv.mtu) {
        Ok(()) => {}
        Err(hygiene::Bad::SrcMacMulticast) => return DropReason::SrcMacMulticast.next(),
        Err(hygiene::Bad::SrcMacZero) => return DropReason::SrcMacZero.next(),
        Err(hygiene::Bad::OverMtu) => return DropReason::OverMtu.next(),
    }
    let mut key = TagKey::of(&l2);
    if let (true, Some((table, main_l2))) = (VLAN, r.parent) {
        // Sub-interface classification, here as in VPP (`ethernet-input`, `eth_identify_subint`):
        // the tags were parsed once, above; the verdict is looked up once per run of frames from
        // this interface with these tags.
        if !matches!(last, Some(c) if c.rx == rx && c.key == key) {
            let verdict = classify(t, table, main_l2, rx, key);
            *last = Some(Classified { rx, key, verdict });
        }
        let Some(c) = last.as_ref() else {
            return DropReason::NoService.next(); // set just above
        };
        match &c.verdict {
            Verdict::Main => {}
            Verdict::Drop(reason) => return reason.next(),
            Verdict::Sub {
                sw,
                admin_up,
                service: s,
                vtr,
                after,
            } => {
                counters.add(t.interfaces, *sw, total_len as u64, false);
                if !admin_up {
                    return DropReason::AdminDown.next();
                }
                (service, rx) = (*s, *sw);
                t.pool.header_mut(h).rx_port = *sw;
                if !vtr.is_none() {
                    key = match *after {
                        Ok(k) => k,
                        Err(RewriteError::TooManyTags) => {
                            return DropReason::TooManyVlanTags.next()
                        }
                        // Classification matched at least the tags the rewrite pops (config
                        // refuses more); only a bug gets here.
                        Err(_) => return DropReason::Malformed.next(),
                    };
                    if move_tags(t.pool, h, vtr).is_err() {
                        return DropReason::NoHeadroom.next();
                    }
                }
            }
        }
    }
    finish(t, h, l2, key, service, rx)
}

/// Every frame of a vector, the receive interface looked up again only when it changes.
#[inline(always)]
fn run<const VLAN: bool>(t: &mut Tables<'_>, pkts: &[u32], nexts: &mut [Next]) {
    let Some(&first) = pkts.first() else {
        return;
    };
    let mut cur = RxIf::of(t.interfaces, t.vlan, VLAN, t.pool.header(first).rx_port);
    let mut last = None;
    let mut counters = CounterRun::default();
    for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
        let rx = t.pool.header(h).rx_port;
        if rx != cur.rx {
            cur = RxIf::of(t.interfaces, t.vlan, VLAN, rx);
        }
        // Frames of an interface without sub-interfaces take the plain path even in a switch
        // that has some.
        *n = if VLAN && cur.parent.is_some() {
            one::<true>(t, &cur, h, &mut last, &mut counters)
        } else {
            one::<false>(t, &cur, h, &mut last, &mut counters)
        };
    }
    counters.flush(t.interfaces, false);
}

/// The header fields of a frame with tags `key` and its service's next node.
#[inline(always)]
fn finish(
    t: &mut Tables<'_>,
    h: u32,
    l2: L2Header,
    key: TagKey,
    service: Service,
    rx: SwIfIdx,
) -> Next {
    let hdr = t.pool.header_mut(h);
    // At most two tags, so the offset fits.
    hdr.l3_offset = 14 + 4 * key.count as u16;
    hdr.vlan = key.outer;
    hdr.inner_vlan = key.inner;
    hdr.ethertype = l2.ethertype.0;
    match service {
        // An interface with no L2 service may be routed (the `ip` feature); its MAC is read here,
        // not carried with every frame.
        Service::None => {
            let Some(mac) = t
                .interfaces
                .get(rx as usize)
                .and_then(Option::as_ref)
                .map(|i| i.mac)
            else {
                return DropReason::NoService.next();
            };
            match crate::ip::classify(t.ip, rx, mac, l2.dst_addr, hdr.ethertype, hdr.vlan) {
                Some(L3Input::Ip4) => Edge::Ip4Input.next(),
                Some(L3Input::Arp) => Edge::ArpInput.next(),
                Some(L3Input::Ip6) => Edge::Ip6Input.next(),
                Some(L3Input::MacMismatch) => DropReason::L3MacMismatch.next(),
                Some(L3Input::Other) | None => DropReason::NoService.next(),
            }
        }
        Service::Xconnect { .. } => Edge::L2Xconnect.next(),
        Service::Bridge { bd } => {
            hdr.bd = bd;
            match t.bridges.get(bd as usize).and_then(Option::as_ref) {
                Some(b) if b.settings.learn => Edge::L2Learn.next(),
                Some(_) => Edge::L2Fwd.next(),
                None => DropReason::NoBridge.next(),
            }
        }
    }
}

impl Node<SwitchState> for EthernetInput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "ethernet-input",
            next_nodes: Edge::NAMES,
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        let SwitchState {
            interfaces,
            vlan,
            ip,
            bridges,
            ..
        } = &mut *cx.state;
        let mut t = Tables {
            pool: &mut *cx.pool,
            interfaces,
            vlan,
            ip,
            bridges,
        };
        // A switch without sub-interfaces pays one check per vector for them.
        if t.vlan.parents.iter().any(Option::is_some) {
            run::<true>(&mut t, pkts, nexts);
        } else {
            run::<false>(&mut t, pkts, nexts);
        }
    }

    fn trace(&self, pool: &Pool, pkt: u32) -> String {
        let h = pool.header(pkt);
        format!(
            "ethertype {:#06x} vlan {}/{} l3-offset {} rx-port {} len {}",
            h.ethertype, h.vlan, h.inner_vlan, h.l3_offset, h.rx_port, h.total_len
        )
    }
}
