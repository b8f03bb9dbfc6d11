//! `ethernet-input`: the first L2 node of every received frame (after `interface-rx` and the input arc). It validates the L2 header once with
//! `wire::L2Header::parse` (addresses, up to two VLAN tags — IEEE 802.1Q-2018 §9.6 — and the final
//! type/length, IEEE 802.3 §3.2.6), records what later nodes need in the buffer header (`l3_offset`,
//! `vlan`, `inner_vlan`, `ethertype`, and `bd` for bridge members), and classifies the frame by its
//! receive interface's service.
//!
//! On an interface with VLAN sub-interfaces (made by the `vlan` feature) it first finds the one the parsed tags
//! belong to (`subif::ParentTable::classify`, VPP's order; VPP does this in its `ethernet-input`
//! too, `eth_identify_subint`), once per run of frames with the same receive interface and tags;
//! the frame becomes the sub-interface's (`rx_port`, its `rx_packets`/`rx_bytes`), gets its
//! ingress tag rewrite (`subif::move_tags`) and goes to the sub-interface's service, with the
//! header fields describing the tags it has after the rewrite. The receive interface (its state,
//! service, MTU and sub-interface table) is looked up once per run of frames from it, the
//! sub-interface verdict once per run of frames from it with the same tags; a switch without
//! sub-interfaces pays one check per vector for them. The frames after the first of such a run
//! take a fast path when the first went to an L2 sub-interface (`FastIn`): their tag bytes
//! (TPIDs, VIDs and the type after the tags, `subif::TagBytes`) compare equal to the first's as
//! one masked 8-byte word and a 2-byte type, which promises the same parse and the same verdict,
//! so they are not parsed again: the input hygiene, the rewrite as fixed-size writes
//! (`subif::shift_tags`) and the header fields decided with the first. VPP's `ethernet-input`
//! does the same with its last-match cache (`eth_input_tag_lookup` keyed by the tag words).
//!
//! Dispatch is by tables the features register ([`crate::feature::Feature::services`],
//! [`crate::feature::Feature::ethertypes`]; VPP's `next_by_ethertype`): the node names no
//! feature. A frame of an interface with a service goes to the node the service's feature picks
//! for it ([`ServiceInput`]), once per run of frames from the interface; a frame of an interface
//! with no service, untagged and for the interface's MAC (or a group address), to the node
//! registered for its ethertype if the interface takes that type ([`EthertypeInput`]); unicast
//! frames to another MAC on an interface that takes any are dropped as `l3-mac-mismatch`.
//! Next edges: the registered nodes, in [`crate::feature::FEATURES`] order ([`edges`]): today
//! `l2-xconnect`, `l2-learn` (bridge that learns), `l2-fwd` (bridge that does not) from `l2`,
//! `ip4-input` / `arp-input` / `ip6-input` (IPv4 / ARP on an interface with an IPv4 address, IPv6
//! on one with an IPv6 address) from `ip`.
//! Drops: `admin-down` (receive interface administratively down), `no-service` (interface has no
//! service, or is gone),
//! `no-bridge` (the service's feature picks no node: a bridge gone; a bug guard), and the wire errors by name: `runt`, `truncated-vlan-tag`,
//! `too-many-vlan-tags` (also: a rewrite that would leave three), `bad-length-field`, and
//! `malformed` for any other parse error; `unknown-vlan` (tags no sub-interface of the receive
//! interface takes, and the main interface does not), `no-headroom` (no room for pushed tags).
//! The input hygiene of [`super::hygiene`]: `src-mac-multicast`, `src-mac-zero`, `over-mtu`
//! (receive interface's MTU); 14–59-byte frames are forwarded (the runt policy there).
//! Trace: `ethertype 0x0800 vlan V/I l3-offset N rx-port P`.

use std::sync::OnceLock;

use vecswitch_buffer::Pool;
use vecswitch_graph::{Cx, Next, Node, NodeInfo};
use vecswitch_wire::{Error as WireError, EthernetAddress, L2Header};

use vecswitch_graph::named_enum;

use super::subif::{
    move_tags, set_shifted, shift_tags, CounterRun, ParentTable, RewriteError, TagBytes, TagKey,
    Vtr,
};
use super::{hygiene, Service, ServiceKind, SwIfIdx};
use crate::feature::{Feature, FEATURES};
use crate::state::SwitchState;

/// An ethertype a feature takes from `ethernet-input` ([`Feature::ethertypes`]): frames of this
/// type received untagged on an interface with no L2 service, for the interface's MAC or a group
/// address, go to `node` when `enabled` says the interface takes them.
#[derive(Debug, Clone, Copy)]
pub struct EthertypeInput {
    /// The type after the tags (IEEE 802.3 §3.2.6), e.g. 0x0800.
    pub ethertype: u16,
    /// The node the frames go to (an edge of `ethernet-input`).
    pub node: &'static str,
    /// Whether interface `rx` takes frames of this type (the IP feature: it has an address of the
    /// family). Asked once per run of frames from the interface.
    pub enabled: fn(&SwitchState, SwIfIdx) -> bool,
}

/// A service kind a feature takes the frames of ([`Feature::services`]): frames received on an
/// interface with a service of kind `kind` go to the one of `nodes` that `pick` names.
#[derive(Debug, Clone, Copy)]
pub struct ServiceInput {
    pub kind: ServiceKind,
    /// The nodes the frames may go to (edges of `ethernet-input`).
    pub nodes: &'static [&'static str],
    /// The index into `nodes` for frames of `service` (of this kind); `None` when the service's
    /// object is gone (dropped as `no-bridge`, a bug guard). Asked once per run of frames from
    /// the interface.
    pub pick: fn(&SwitchState, Service) -> Option<usize>,
}

/// Most ethertypes all features together may register (a bit each in a per-interface mask).
pub const MAX_ETHERTYPES: usize = 8;

/// `ethernet-input`'s dispatch tables, gathered from [`FEATURES`] once.
#[derive(Debug)]
struct Dispatch {
    /// The next nodes: every feature's service nodes and ethertype nodes, in [`FEATURES`] order.
    edges: Vec<&'static str>,
    /// The registered ethertypes, each with its edge.
    ethertypes: Vec<(EthertypeInput, Next)>,
    /// By [`ServiceKind::index`]: the service's registration and the edge of its first node.
    services: [Option<(ServiceInput, u16)>; ServiceKind::ALL.len()],
}

impl Dispatch {
    /// The tables of `features`. Panics (at graph build, `InterfaceFeature::register`) on a
    /// registration that cannot work: an ethertype or a service kind registered twice, more than
    /// [`MAX_ETHERTYPES`] ethertypes.
    fn of(features: &[&dyn Feature]) -> Dispatch {
        let mut d = Dispatch {
            edges: Vec::new(),
            ethertypes: Vec::new(),
            services: [None; ServiceKind::ALL.len()],
        };
        for f in features {
            for s in f.services() {
                let slot = &mut d.services[s.kind.index()];
                assert!(
                    slot.is_none(),
                    "feature `{}` registers service {:?}, which another feature took",
                    f.name(),
                    s.kind
                );
                *slot = Some((*s, d.edges.len() as u16));
                d.edges.extend_from_slice(s.nodes);
            }
            for e in f.ethertypes() {
                assert!(
                    d.ethertypes.iter().all(|(o, _)| o.ethertype != e.ethertype),
                    "feature `{}` registers ethertype {:#06x}, which another feature took",
                    f.name(),
                    e.ethertype
                );
                let next = match d.edges.iter().position(|&n| n == e.node) {
                    Some(i) => Next::edge(i as u16),
                    None => {
                        d.edges.push(e.node);
                        Next::edge(d.edges.len() as u16 - 1)
                    }
                };
                d.ethertypes.push((*e, next));
            }
        }
        assert!(
            d.ethertypes.len() <= MAX_ETHERTYPES,
            "{} ethertypes registered: accepted at most {MAX_ETHERTYPES}",
            d.ethertypes.len()
        );
        d
    }

    /// Where frames of interface `sw` (which has `service` and MAC `mac`) go, asked of the
    /// registered features.
    #[inline]
    fn to(&self, st: &SwitchState, sw: SwIfIdx, service: Service, mac: EthernetAddress) -> To {
        let Some(kind) = service.kind() else {
            let mut l3 = 0u8;
            for (i, (e, _)) in self.ethertypes.iter().enumerate() {
                if (e.enabled)(st, sw) {
                    l3 |= 1 << i;
                }
            }
            return To {
                next: DropReason::NoService.next(),
                l3,
                mac,
            };
        };
        let next = match &self.services[kind.index()] {
            None => DropReason::NoService.next(),
            Some((s, first)) => match (s.pick)(st, service) {
                Some(i) if i < s.nodes.len() => Next::edge(first + i as u16),
                _ => DropReason::NoBridge.next(),
            },
        };
        To { next, l3: 0, mac }
    }

    /// The next node of an untagged frame for this interface of type `ethertype` on an interface
    /// that takes the registered types in mask `l3`.
    #[inline(always)]
    fn by_ethertype(&self, l3: u8, ethertype: u16) -> Next {
        for (i, (e, next)) in self.ethertypes.iter().enumerate() {
            if e.ethertype == ethertype && l3 & (1 << i) != 0 {
                return *next;
            }
        }
        DropReason::NoService.next()
    }
}

/// The dispatch tables of [`FEATURES`].
fn dispatch() -> &'static Dispatch {
    static D: OnceLock<Dispatch> = OnceLock::new();
    D.get_or_init(|| Dispatch::of(FEATURES))
}

/// Next edges of `ethernet-input`: the nodes the features register ([`ServiceInput::nodes`],
/// [`EthertypeInput::node`]), in [`FEATURES`] order.
pub fn edges() -> &'static [&'static str] {
    &dispatch().edges
}

/// The edge of `ethernet-input` to `node`, if it is one.
pub fn edge_to(node: &str) -> Option<Next> {
    edges()
        .iter()
        .position(|&e| e == node)
        .map(|i| Next::edge(i as u16))
}

/// Where the frames of one interface go, decided once per run of frames from it (or, for a
/// sub-interface, with its classification).
#[derive(Clone, Copy)]
struct To {
    /// For an interface with a service: the node its feature picked (or the drop).
    next: Next,
    /// For one without: the registered ethertypes it takes, a bit each ([`Dispatch::ethertypes`]
    /// order); 0: none (`no-service`).
    l3: u8,
    /// Its MAC.
    mac: EthernetAddress,
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

/// What `ethernet-input` reads and writes besides the packets: the switch state (read between
/// frames for the decisions made once per run, written for the interface counters) and the
/// dispatch tables.
struct Tables<'a> {
    pool: &'a mut Pool,
    state: &'a mut SwitchState,
    d: &'static Dispatch,
}

/// The receive interface of a run of frames, looked up once per run (frames arrive in runs from
/// one port: `interface-rx` hands over one `rx_burst` after another).
#[derive(Clone, Copy)]
struct RxIf {
    rx: SwIfIdx,
    /// Its admin state, service, MTU and where its frames go; `None` when it is gone.
    iface: Option<IfView>,
    /// Whether its main interface is in L2 mode, when it has live sub-interfaces
    /// (`SubIfTables::live_parent`); `None` also in a switch without any.
    parent: Option<bool>,
}

#[derive(Clone, Copy)]
struct IfView {
    admin_up: bool,
    service: Service,
    mtu: u16,
    to: To,
}

impl RxIf {
    #[inline]
    fn of(st: &SwitchState, d: &Dispatch, any_parent: bool, rx: SwIfIdx) -> RxIf {
        let iface = st.interface(rx).map(|i| IfView {
            admin_up: i.admin_up,
            service: i.service,
            mtu: i.mtu,
            to: d.to(st, rx, i.service, i.mac),
        });
        let parent = if any_parent {
            st.subifs.live_parent(&st.interfaces, rx).map(|(_, l2)| l2)
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
    fn of(verdict: &Verdict, frame: &[u8], count: u8, mtu: u16) -> Option<FastIn> {
        let Verdict::Sub {
            sw,
            admin_up: true,
            service,
            vtr,
            after: Ok(after),
            to,
        } = *verdict
        else {
            return None;
        };
        let (next, bd) = match service {
            Service::Xconnect { .. } => (to.next, None),
            Service::Bridge { bd } => (to.next, Some(bd)),
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
        counters.add_run(&mut t.state.interfaces, self.sw, packets, bytes, false);
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
        /// Where its frames go.
        to: To,
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
        Some(sw) => match t.state.interface(sw) {
            None => Verdict::Drop(DropReason::NoService),
            Some(i) => {
                let vtr = t.state.subifs.ingress(sw);
                Verdict::Sub {
                    sw,
                    admin_up: i.admin_up,
                    service: i.service,
                    vtr,
                    after: vtr.key_after(key),
                    to: t.d.to(&*t.state, sw, i.service, i.mac),
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
    r: &RxIf,
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
    let (mut service, mut to) = (ifv.service, ifv.to);
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
    if let (true, Some(main_l2)) = (VLAN, r.parent) {
        let rx = r.rx;
        // Sub-interface classification, here as in VPP (`ethernet-input`, `eth_identify_subint`):
        // the tags were parsed once, above; the verdict is looked up once per run of frames from
        // this interface with these tags.
        if !matches!(last, Some(c) if c.rx == rx && c.key == key) {
            let verdict = match t.state.subifs.parent(rx) {
                Some(table) => classify(t, table, main_l2, rx, key),
                None => Verdict::Drop(DropReason::NoService), // `r.parent` says it has one
            };
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
        if let Some(f) = FastIn::of(&c.verdict, t.pool.data(h), key.count, ifv.mtu) {
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
                to: sub_to,
            } => {
                counters.add(&mut t.state.interfaces, *sw, total_len as u64, false);
                if !admin_up {
                    return DropReason::AdminDown.next();
                }
                (service, to) = (*s, *sub_to);
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
    finish(t, h, l2, key, service, &to)
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
        let cur = RxIf::of(&*t.state, t.d, VLAN, t.pool.header(first).rx_port);
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
    counters.flush(&mut t.state.interfaces, false);
}

/// The header fields of a frame with tags `key` and its next node: its service's (`to`, decided
/// with the run), or, with no service, its ethertype's.
#[inline(always)]
fn finish(
    t: &mut Tables<'_>,
    h: u32,
    l2: L2Header,
    key: TagKey,
    service: Service,
    to: &To,
) -> Next {
    let hdr = t.pool.header_mut(h);
    // At most two tags, so the offset fits.
    hdr.l3_offset = 14 + 4 * key.count as u16;
    hdr.vlan = key.outer;
    hdr.inner_vlan = key.inner;
    hdr.ethertype = l2.ethertype.0;
    match service {
        // An interface with no L2 service may take frames by their ethertype (the `ip` feature
        // registers IPv4, ARP and IPv6): untagged ones for its MAC or a group address.
        Service::None => {
            if to.l3 == 0 || hdr.vlan != 0 {
                DropReason::NoService.next()
            } else if l2.dst_addr != to.mac && !l2.dst_addr.is_multicast() {
                DropReason::L3MacMismatch.next()
            } else {
                t.d.by_ethertype(to.l3, hdr.ethertype)
            }
        }
        Service::Xconnect { .. } => to.next,
        Service::Bridge { bd } => {
            hdr.bd = bd;
            to.next
        }
    }
}

impl Node<SwitchState> for EthernetInput {
    fn info(&self) -> NodeInfo {
        NodeInfo {
            name: "ethernet-input",
            next_nodes: edges(),
            drop_reasons: DropReason::NAMES,
            counters: &[],
        }
    }

    fn process(&mut self, cx: &mut Cx<'_, SwitchState>, pkts: &[u32], nexts: &mut [Next]) {
        let mut t = Tables {
            pool: &mut *cx.pool,
            state: &mut *cx.state,
            d: dispatch(),
        };
        // A switch without sub-interfaces pays one check per vector for them.
        if t.state.subifs.any() {
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
