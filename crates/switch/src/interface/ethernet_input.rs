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
//! sub-interfaces pays one check per vector for them. The frames after the first of such a run
//! take a fast path when the first went to an L2 sub-interface (`FastIn`): their tag bytes
//! (TPIDs, VIDs and the type after the tags, `vlan::TagBytes`) compare equal to the first's as
//! one masked 8-byte word and a 2-byte type, which promises the same parse and the same verdict,
//! so they are not parsed again: the input hygiene, the rewrite as fixed-size writes
//! (`vlan::shift_tags`) and the header fields decided with the first. VPP's `ethernet-input`
//! does the same with its last-match cache (`eth_input_tag_lookup` keyed by the tag words).
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
use vecswitch_wire::{Error as WireError, EthernetAddress, L2Header};

use vecswitch_graph::named_enum;

use super::{Interface, Service, SwIfIdx};
use crate::ip::{IpState, L3Input};
use crate::l2::{hygiene, Bridge};
use crate::state::SwitchState;
use crate::vlan::{
    move_tags, set_shifted, shift_tags, CounterRun, ParentTable, RewriteError, TagBytes, TagKey,
    VlanState, Vtr,
};

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
    /// The drop reason for an input hygiene failure.
    fn from_hygiene(b: hygiene::Bad) -> DropReason {
        match b {
            hygiene::Bad::SrcMacMulticast => DropReason::SrcMacMulticast,
            hygiene::Bad::SrcMacZero => DropReason::SrcMacZero,
            hygiene::Bad::OverMtu => DropReason::OverMtu,
        }
    }

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
    /// The rest of the run's work, when it can be done without parsing ([`FastIn`]).
    fast: Option<FastIn>,
}

/// What every later frame of a run (same receive interface, same [`TagBytes`] as its first) gets,
/// decided with the first: such a frame parses as the first did, is classified to the same
/// L2 sub-interface, and leaves `ethernet-input` with the same header fields and next node. Its
/// own work is the tag-byte comparison, the input hygiene, the rewrite's fixed-size writes
/// ([`shift_tags`]) and the header fields; counted per run. Frames that do not compare equal
/// (or lack the headroom for a push) take the full path.
#[derive(Clone, Copy)]
struct FastIn {
    tags: TagBytes,
    sw: SwIfIdx,
    vtr: Vtr,
    /// The tags after the rewrite.
    after: TagKey,
    /// The L2 header's length as received (14 + 4 × tags), for the MTU check.
    l3_in: u16,
    /// The receive interface's MTU.
    mtu: u16,
    /// The sub-interface's service: its next node, and its bridge.
    next: Next,
    bd: Option<u16>,
}

impl FastIn {
    /// The fast path of the frames after `frame` (tags `count`, received on an interface whose
    /// MTU is `mtu`), if `verdict` is an L2 sub-interface that is up and whose rewrite applies.
    fn of(t: &Tables<'_>, verdict: &Verdict, frame: &[u8], count: u8, mtu: u16) -> Option<FastIn> {
        let Verdict::Sub {
            sw,
            admin_up: true,
            service,
            vtr,
            after: Ok(after),
        } = *verdict
        else {
            return None;
        };
        let (next, bd) = match service {
            Service::Xconnect { .. } => (Edge::L2Xconnect.next(), None),
            Service::Bridge { bd } => (bridge_next(t.bridges, bd), Some(bd)),
            Service::None => return None,
        };
        Some(FastIn {
            tags: TagBytes::of(frame, count)?,
            sw,
            vtr,
            after,
            l3_in: 14 + 4 * count as u16,
            mtu,
            next,
            bd,
        })
    }

    /// The frames from the start of `pkts` received on `rx` by the fast path, up to the first that
    /// must take the full one; returns how many it took. Counted once on the sub-interface.
    #[inline(always)]
    fn stretch(
        &self,
        t: &mut Tables<'_>,
        rx: SwIfIdx,
        pkts: &[u32],
        nexts: &mut [Next],
        counters: &mut CounterRun,
    ) -> usize {
        let (mut done, mut packets, mut bytes) = (0, 0u64, 0u64);
        for (&h, n) in pkts.iter().zip(nexts.iter_mut()) {
            if t.pool.header(h).rx_port != rx {
                break;
            }
            *n = match self.one(t.pool, h) {
                None => break,
                Some(Ok(len)) => {
                    packets += 1;
                    bytes += len as u64;
                    self.next
                }
                Some(Err(r)) => r.next(),
            };
            done += 1;
        }
        counters.add_run(t.interfaces, self.sw, packets, bytes, false);
        done
    }

    /// Frame `h` by the fast path: `Ok(its length)` (to be counted on the sub-interface) or the
    /// input hygiene's drop; `None` (nothing changed) when it must take the full path.
    #[inline(always)]
    fn one(&self, pool: &mut Pool, h: u32) -> Option<Result<u32, DropReason>> {
        let hdr = pool.header(h);
        let (start, len, total_len) = (hdr.data_offset as usize, hdr.len as usize, hdr.total_len);
        let raw = pool.raw_mut(h);
        let frame = raw.get(start..start + len)?;
        if !self.tags.matches(frame) {
            return None;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&frame[6..12]);
        if let Err(b) = hygiene::check(
            &EthernetAddress(src),
            total_len,
            self.l3_in as usize,
            self.mtu,
        ) {
            return Some(Err(DropReason::from_hygiene(b)));
        }
        let shifted = !self.vtr.is_none();
        let new_start = if shifted {
            shift_tags(raw, start, &self.vtr)?
        } else {
            start
        };
        let hdr = pool.header_mut(h);
        if shifted {
            set_shifted(hdr, new_start, &self.vtr);
        }
        hdr.rx_port = self.sw;
        hdr.l3_offset = 14 + 4 * self.after.count as u16;
        hdr.vlan = self.after.outer;
        hdr.inner_vlan = self.after.inner;
        hdr.ethertype = self.tags.ethertype();
        if let Some(bd) = self.bd {
            hdr.bd = bd;
        }
        Some(Ok(total_len))
    }
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
    if let Err(b) = hygiene::check(&l2.src_addr, total_len, l2.l3_offset, ifv.mtu) {
        return DropReason::from_hygiene(b).next();
    }
    let mut key = TagKey::of(&l2);
    if let (true, Some((table, main_l2))) = (VLAN, r.parent) {
        // Sub-interface classification, here as in VPP (`ethernet-input`, `eth_identify_subint`):
        // the tags were parsed once, above; the verdict is looked up once per run of frames from
        // this interface with these tags.
        if !matches!(last, Some(c) if c.rx == rx && c.key == key) {
            let verdict = classify(t, table, main_l2, rx, key);
            *last = Some(Classified {
                rx,
                key,
                verdict,
                fast: None,
            });
        }
        let Some(c) = last.as_mut() else {
            return DropReason::NoService.next(); // set just above
        };
        // The frames after this one with its tag bytes take the fast path (it holds for the
        // rest of the run from this interface whatever comes in between).
        if let Some(f) = FastIn::of(t, &c.verdict, t.pool.data(h), key.count, ifv.mtu) {
            c.fast = Some(f);
        }
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

/// Every frame of a vector, run by run of frames from one receive interface (frames arrive in
/// runs from one port: `interface-rx` hands over one `rx_burst` after another), the interface
/// looked up once per run and the choice between the plain and the sub-interface path made once
/// per run.
#[inline(always)]
fn run<const VLAN: bool>(t: &mut Tables<'_>, pkts: &[u32], nexts: &mut [Next]) {
    // One next per packet (the graph hands over as many): each inner loop takes at least one.
    let pkts = &pkts[..pkts.len().min(nexts.len())];
    let mut last: Option<Classified> = None;
    let mut counters = CounterRun::default();
    let mut i = 0;
    while let Some(&first) = pkts.get(i) {
        let cur = RxIf::of(t.interfaces, t.vlan, VLAN, t.pool.header(first).rx_port);
        // Frames of an interface without sub-interfaces take the plain path even in a switch
        // that has some.
        if VLAN && cur.parent.is_some() {
            loop {
                // The rest of a run of frames alike by the fast path, as far as it goes ...
                if let Some(f) = last
                    .as_ref()
                    .filter(|c| c.rx == cur.rx)
                    .and_then(|c| c.fast)
                {
                    i += f.stretch(t, cur.rx, &pkts[i..], &mut nexts[i..], &mut counters);
                }
                // ... then one frame by the full one.
                match (pkts.get(i), nexts.get_mut(i)) {
                    (Some(&h), Some(n)) if t.pool.header(h).rx_port == cur.rx => {
                        *n = one::<true>(t, &cur, h, &mut last, &mut counters);
                        i += 1;
                    }
                    _ => break,
                }
            }
        } else {
            while let (Some(&h), Some(n)) = (pkts.get(i), nexts.get_mut(i)) {
                if t.pool.header(h).rx_port != cur.rx {
                    break;
                }
                *n = one::<false>(t, &cur, h, &mut last, &mut counters);
                i += 1;
            }
        }
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
            bridge_next(t.bridges, bd)
        }
    }
}

/// The next node of a frame for bridge `bd`.
#[inline(always)]
fn bridge_next(bridges: &[Option<Bridge>], bd: u16) -> Next {
    match bridges.get(bd as usize).and_then(Option::as_ref) {
        Some(b) if b.settings.learn => Edge::L2Learn.next(),
        Some(_) => Edge::L2Fwd.next(),
        None => DropReason::NoBridge.next(),
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
