//! Sub-interface classification, owned by the interface layer (VPP keeps it in `ethernet`,
//! `eth_identify_subint`): the tags of a frame ([`TagKey`], read by the L2 parser or
//! [`read_tags`]), per parent a [`ParentTable`] searched in VPP's order
//! (`src/vnet/ethernet/ethernet.h`): exact Q-in-Q, outer tag with any inner, single tag,
//! `default`, `untagged` (or the main interface), and the tag rewrite as byte work ([`Vtr`],
//! [`move_tags`], the fast path's [`TagBytes`] and [`shift_tags`]). The tables are
//! [`SubIfTables`] in [`crate::state::SwitchState::subifs`]; the feature that makes sub-interfaces (`vlan`)
//! fills them, `ethernet-input` classifies and rewrites by them, and the feature's egress uses
//! the same primitives.

use vecswitch_buffer::{BufferHeader, Pool};
use vecswitch_wire::{EtherType, L2Header, L2Tag};

use super::{Interface, Service, SwIfIdx};

/// A tag as a push writes it: PCP 0, DEI clear (VPP pushes the configured TCI whole).
pub const fn push_tag(tpid: EtherType, vid: u16) -> L2Tag {
    L2Tag {
        tpid,
        pcp: 0,
        dei: false,
        vid,
    }
}

/// A tag rewrite as byte work: pop `pop` tags, then push `push[..n]` (outermost first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vtr {
    pub pop: u8,
    pub push: [L2Tag; 2],
    pub n: u8,
    /// `push[..n]` as the bytes written into the frame (TPID and TCI of each, big-endian), so
    /// that the fast path copies them instead of encoding them per packet.
    pub bytes: [u8; 8],
}

impl Vtr {
    /// Nothing to do.
    pub const NONE: Vtr = Vtr::new(0, [push_tag(EtherType::VLAN, 0); 2], 0);

    /// Pop `pop` tags, then push `push[..n]`.
    pub const fn new(pop: u8, push: [L2Tag; 2], n: u8) -> Vtr {
        let mut bytes = [0u8; 8];
        let mut i = 0;
        while i < 2 {
            let t = push[i].tpid.0.to_be_bytes();
            let c = push[i].tci().to_be_bytes();
            bytes[4 * i] = t[0];
            bytes[4 * i + 1] = t[1];
            bytes[4 * i + 2] = c[0];
            bytes[4 * i + 3] = c[1];
            i += 1;
        }
        Vtr {
            pop,
            push,
            n,
            bytes,
        }
    }

    /// True when the rewrite changes nothing.
    #[inline]
    pub const fn is_none(&self) -> bool {
        self.pop == 0 && self.n == 0
    }
}

/// What a sub-interface matches in its parent's table ([`ParentTable::insert`]; the VLAN
/// feature's `Encap::matching`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubMatch {
    /// One outer tag of VID `outer` (802.1ad S-tag if `dot1ad`, else 802.1Q C-tag), and an inner
    /// one as `inner` says; `exact`: only frames with exactly these tags.
    Tagged {
        dot1ad: bool,
        outer: u16,
        inner: InnerMatch,
        exact: bool,
    },
    /// Tagged frames no other sub-interface takes.
    Default,
    /// Frames without a tag (instead of the main interface).
    Untagged,
}

/// The inner tag a [`SubMatch::Tagged`] matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InnerMatch {
    /// None: a single-tag match.
    None,
    /// Any inner VID.
    Any,
    /// This inner VID.
    Vid(u16),
}

/// The interface layer's sub-interface tables (one field of [`crate::state::SwitchState`], filled by the
/// feature that makes sub-interfaces, `vlan`): per parent its classification table, per
/// sub-interface the tag rewrite of the frames it receives. `ethernet-input` classifies by them.
#[derive(Debug, Clone, Default)]
pub struct SubIfTables {
    /// By parent interface index: its classification table (only parents with sub-interfaces).
    pub parents: Vec<Option<ParentTable>>,
    /// By interface index: the ingress rewrite of a sub-interface ([`Vtr::NONE`] elsewhere).
    pub ingress: Vec<Vtr>,
}

impl SubIfTables {
    /// Parent `p`'s table.
    #[inline]
    pub fn parent(&self, p: SwIfIdx) -> Option<&ParentTable> {
        self.parents.get(p as usize).and_then(Option::as_ref)
    }

    /// Whether any interface has sub-interfaces.
    #[inline]
    pub fn any(&self) -> bool {
        self.parents.iter().any(Option::is_some)
    }

    /// Parent `p`'s table and whether its main interface is in L2 mode (has a service), if `p` is
    /// still the interface the table was built for.
    #[inline]
    pub fn live_parent<'a>(
        &'a self,
        ifaces: &[Option<Interface>],
        p: SwIfIdx,
    ) -> Option<(&'a ParentTable, bool)> {
        let t = self.parent(p)?;
        let i = ifaces.get(p as usize)?.as_ref()?;
        (i.name == t.parent_name).then_some((t, i.service != Service::None))
    }

    /// Sets parent `p`'s table (`None`: it has no sub-interfaces any more).
    pub fn set_parent(&mut self, p: SwIfIdx, table: Option<ParentTable>) {
        let i = p as usize;
        if self.parents.len() <= i {
            self.parents.resize_with(i + 1, || None);
        }
        self.parents[i] = table;
    }

    /// Sub-interface `sw`'s ingress rewrite.
    #[inline]
    pub fn ingress(&self, sw: SwIfIdx) -> Vtr {
        self.ingress.get(sw as usize).copied().unwrap_or(Vtr::NONE)
    }

    /// Sets sub-interface `sw`'s ingress rewrite ([`Vtr::NONE`] when it is deleted).
    pub fn set_ingress(&mut self, sw: SwIfIdx, vtr: Vtr) {
        let i = sw as usize;
        if self.ingress.len() <= i {
            self.ingress.resize(i + 1, Vtr::NONE);
        }
        self.ingress[i] = vtr;
    }
}

/// A VID's sub-interfaces (VPP's `vlan_intf_t` and its `qinq_intf_t`s).
#[derive(Debug, Clone, Default)]
struct VidEntry {
    /// `dot1q|dot1ad N` and whether it is `exact-match`.
    single: Option<(SwIfIdx, bool)>,
    /// `… inner-dot1q any`.
    inner_any: Option<SwIfIdx>,
    /// `… inner-dot1q M`, by M.
    qinq: Vec<(u16, SwIfIdx)>,
}

/// The sub-interfaces of one outer TPID, by outer VID.
#[derive(Debug, Clone, Default)]
struct VidTable {
    /// 4096 slots once the first entry is added: 0 = none, else index into `entries` + 1.
    index: Vec<u16>,
    entries: Vec<VidEntry>,
}

impl VidTable {
    #[inline]
    fn get(&self, vid: u16) -> Option<&VidEntry> {
        match self.index.get(vid as usize) {
            Some(&i) if i != 0 => self.entries.get(i as usize - 1),
            _ => None,
        }
    }

    fn entry(&mut self, vid: u16) -> &mut VidEntry {
        if self.index.is_empty() {
            self.index = vec![0; 4096];
        }
        let slot = &mut self.index[vid as usize & 0xfff];
        if *slot == 0 {
            self.entries.push(VidEntry::default());
            *slot = self.entries.len() as u16;
        }
        &mut self.entries[*slot as usize - 1]
    }
}

/// The tags of a frame that classification looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagKey {
    /// 0, 1 or 2.
    pub count: u8,
    pub outer_tpid: EtherType,
    pub outer: u16,
    pub inner: u16,
}

impl TagKey {
    /// The key of a parsed L2 header.
    #[inline]
    pub fn of(l2: &L2Header) -> TagKey {
        TagKey {
            count: l2.tag_count() as u8,
            outer_tpid: l2.outer.map_or(EtherType(0), |t| t.tpid),
            outer: l2.outer.map_or(0, |t| t.vid),
            inner: l2.inner.map_or(0, |t| t.vid),
        }
    }
}

/// Why a frame's tags could not be read (IEEE 802.1Q-2018 §9.6): named as the L2 parser names
/// them (`wire::Error::reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagError {
    /// Shorter than an Ethernet header (14 bytes).
    Runt,
    /// A TPID not followed by its TCI and the next type.
    TruncatedVlanTag,
    /// A third TPID.
    TooManyVlanTags,
}

/// The classification key of `frame`, read straight from its bytes (the TPIDs at 12, 16 and 20):
/// what `L2Header::parse` would find, without reading the rest.
#[inline(always)]
pub fn read_tags(frame: &[u8]) -> Result<TagKey, TagError> {
    let be = |i: usize| u16::from_be_bytes([frame[i], frame[i + 1]]);
    if frame.len() < 14 {
        return Err(TagError::Runt);
    }
    let t0 = EtherType(be(12));
    if !t0.is_vlan_tpid() {
        return Ok(TagKey {
            count: 0,
            outer_tpid: EtherType(0),
            outer: 0,
            inner: 0,
        });
    }
    if frame.len() < 18 {
        return Err(TagError::TruncatedVlanTag);
    }
    let outer = be(14) & 0x0fff;
    if !EtherType(be(16)).is_vlan_tpid() {
        return Ok(TagKey {
            count: 1,
            outer_tpid: t0,
            outer,
            inner: 0,
        });
    }
    if frame.len() < 22 {
        return Err(TagError::TruncatedVlanTag);
    }
    if EtherType(be(20)).is_vlan_tpid() {
        return Err(TagError::TooManyVlanTags);
    }
    Ok(TagKey {
        count: 2,
        outer_tpid: t0,
        outer,
        inner: be(18) & 0x0fff,
    })
}

/// Why [`rewrite`] left a frame unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewriteError {
    /// The frame has fewer tags than the rewrite pops.
    TooFewTags,
    /// The frame would leave with more than two tags (the L2 parser's `too-many-vlan-tags`).
    TooManyTags,
    /// No room before the frame for the tags pushed.
    NoHeadroom,
}

impl Vtr {
    /// The tags a frame with tags `key` has after this rewrite (the outer TPID only when the
    /// rewrite pushes one or pops none: otherwise it is the frame's inner TPID, which the key does
    /// not hold, and `EtherType(0)` stands for it), or why the rewrite does not apply.
    #[inline]
    pub fn key_after(&self, key: TagKey) -> Result<TagKey, RewriteError> {
        let (pop, n, count) = (self.pop as usize, self.n as usize, key.count as usize);
        if pop > count {
            return Err(RewriteError::TooFewTags);
        }
        let left = count - pop + n;
        if left > 2 {
            return Err(RewriteError::TooManyTags);
        }
        // The VIDs left, outermost first: the pushed ones, then the frame's after the popped ones.
        let old = [key.outer, key.inner];
        let vid = |i: usize| {
            if i < n {
                self.push[i].vid
            } else {
                old[pop + i - n]
            }
        };
        let outer_tpid = match (left, n, pop) {
            (0, _, _) => EtherType(0),
            (_, 1.., _) => self.push[0].tpid,
            (_, 0, 0) => key.outer_tpid,
            _ => EtherType(0),
        };
        Ok(TagKey {
            count: left as u8,
            outer_tpid,
            outer: if left > 0 { vid(0) } else { 0 },
            inner: if left > 1 { vid(1) } else { 0 },
        })
    }
}

/// The bytes of a frame that decide its tags as `ethernet-input` and [`read_tags`] read them: the
/// TPIDs and VIDs (bytes 12–19 as one big-endian word, masked to the tags present; PCP and DEI
/// are not compared) and the type after the tags, which is neither a TPID nor an 802.3 length
/// (IEEE 802.3 §3.2.6), so nothing about it depends on the frame's length. A frame whose bytes
/// [`TagBytes::matches`] has the same [`TagKey`] and the same `L2Header::parse` outcome (type,
/// offsets, no error) as the frame the value was taken from: the nodes decide a run of such
/// frames once (VPP's `ethernet-input` compares the tag words of a frame with its last match's
/// the same way, `eth_input_tag_lookup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagBytes {
    word: u64,
    mask: u64,
    /// Offset of the type after the tags: 12 + 4 × tags.
    type_at: u8,
    ethertype: u16,
}

impl TagBytes {
    /// The tag bytes of `frame`, which has `count` tags (as read by [`read_tags`] or the L2
    /// parser); `None` for a frame shorter than 20 bytes or whose type after the tags is an
    /// 802.3 length (those are decided frame by frame).
    #[inline]
    pub fn of(frame: &[u8], count: u8) -> Option<TagBytes> {
        let type_at = 12 + 4 * count.min(2);
        let mask = match count {
            0 => 0,
            1 => 0xffff_0fff_0000_0000,
            _ => 0xffff_0fff_ffff_0fff,
        };
        let word = u64::from_be_bytes(frame.get(12..20)?.try_into().ok()?) & mask;
        let at = type_at as usize;
        let ethertype = EtherType(u16::from_be_bytes(frame.get(at..at + 2)?.try_into().ok()?));
        if ethertype.is_vlan_tpid() || ethertype.is_length() {
            return None;
        }
        Some(TagBytes {
            word,
            mask,
            type_at,
            ethertype: ethertype.0,
        })
    }

    /// True when `frame` has these tags and this type after them (and so at least
    /// `max(20, 14 + 4 × tags)` bytes).
    #[inline(always)]
    pub fn matches(&self, frame: &[u8]) -> bool {
        let at = self.type_at as usize;
        match (frame.get(12..20), frame.get(at..at + 2)) {
            (Some(w), Some(t)) => {
                let w = u64::from_be_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
                w & self.mask == self.word && u16::from_be_bytes([t[0], t[1]]) == self.ethertype
            }
            _ => false,
        }
    }

    /// [`TagBytes::matches`] on a frame that starts at byte `f` of window `w` and is at least
    /// [`TagBytes::min_len`] long (`f` at most 8: the window holds byte 22 of the frame).
    #[inline(always)]
    pub fn matches_window(&self, w: &[u8; 32], f: usize) -> bool {
        let f = f.min(8);
        let word = u64::from_be_bytes(*w[f + 12..].first_chunk().expect("f + 20 <= 32"));
        let at = f + (self.type_at as usize).min(20);
        word & self.mask == self.word && u16::from_be_bytes([w[at], w[at + 1]]) == self.ethertype
    }

    /// The length a frame needs for [`TagBytes::matches`] to read it: 20, or the type after the
    /// tags' end.
    #[inline]
    pub fn min_len(&self) -> usize {
        (self.type_at as usize + 2).max(20)
    }

    /// The type after the tags.
    #[inline]
    pub fn ethertype(&self) -> u16 {
        self.ethertype
    }
}

/// The byte work of `vtr` in buffer `raw` (a whole buffer, headroom included) on a frame that
/// starts at `start` and has at least `vtr.pop` tags and `12 + 4 × vtr.pop` bytes in it: VPP's
/// `l2_vtr_process` (`src/vnet/l2/l2_vtr.h`) as fixed-size writes. The 12 address bytes move by
/// 4 × (pop − push) through one 12-byte copy (none for a translate, which pops as many tags as it
/// pushes: its tags are overwritten in place), the pushed tags are written from [`Vtr::bytes`]
/// (prepared at config time) as one 4- or 8-byte copy, and nothing after the tags moves. Returns
/// the frame's new start; `None`, with nothing changed, when there is no headroom for the tags
/// pushed.
#[inline(always)]
pub fn shift_tags(raw: &mut [u8], start: usize, vtr: &Vtr) -> Option<usize> {
    let (pop, n) = (4 * vtr.pop as usize, 4 * vtr.n as usize);
    let new_start = (start + pop).checked_sub(n)?;
    if new_start != start {
        let mut addr = [0u8; 12];
        addr.copy_from_slice(&raw[start..start + 12]);
        raw[new_start..new_start + 12].copy_from_slice(&addr);
    }
    let at = new_start + 12;
    match n {
        4 => raw[at..at + 4].copy_from_slice(&vtr.bytes[..4]),
        8 => raw[at..at + 8].copy_from_slice(&vtr.bytes),
        _ => {}
    }
    Some(new_start)
}

/// Sets the start and lengths of a packet whose first buffer [`shift_tags`] rewrote with `vtr`.
#[inline(always)]
pub fn set_shifted(hdr: &mut BufferHeader, new_start: usize, vtr: &Vtr) {
    let (pop, n) = (4 * vtr.pop as u32, 4 * vtr.n as u32);
    hdr.data_offset = new_start as u16;
    // The frame had at least the popped tags in its first buffer, so neither length goes below
    // zero (`total_len >= len`).
    hdr.len = (hdr.len as u32 + n - pop) as u16;
    hdr.total_len = hdr.total_len + n - pop;
}

/// The byte work of `vtr` on packet `h`, which has at least `vtr.pop` tags in its first buffer and
/// will have at most two (checked by [`Vtr::key_after`]): [`shift_tags`], then the packet's start
/// and lengths set once. Nothing changes when there is no headroom (or, a caller's bug, when the
/// first buffer is too short for the tags popped).
#[inline(always)]
pub fn move_tags(pool: &mut Pool, h: u32, vtr: &Vtr) -> Result<(), RewriteError> {
    let hdr = pool.header(h);
    let (start, len) = (hdr.data_offset as usize, hdr.len as usize);
    if start + 4 * (vtr.pop as usize) < 4 * vtr.n as usize {
        return Err(RewriteError::NoHeadroom);
    }
    if len < 12 + 4 * vtr.pop as usize {
        return Err(RewriteError::TooFewTags);
    }
    let Some(new_start) = shift_tags(pool.raw_mut(h), start, vtr) else {
        return Err(RewriteError::NoHeadroom);
    };
    set_shifted(pool.header_mut(h), new_start, vtr);
    Ok(())
}

/// Applies `vtr` (pop, then push) to packet `h`, whose tags are `key` (parsed by
/// `ethernet-input` or read by [`read_tags`]); returns the tags it has afterwards, with the outer
/// TPID read back from the frame. Nothing changes on an error.
#[inline(always)]
pub fn rewrite(pool: &mut Pool, h: u32, vtr: &Vtr, key: TagKey) -> Result<TagKey, RewriteError> {
    let mut after = vtr.key_after(key)?;
    move_tags(pool, h, vtr)?;
    if after.count > 0 && after.outer_tpid == EtherType(0) {
        let d = pool.data(h);
        after.outer_tpid = EtherType(u16::from_be_bytes([d[12], d[13]]));
    }
    Ok(after)
}

/// Adds packets and bytes to one interface's counters, one lookup per run of packets for the same
/// interface.
#[derive(Debug, Default)]
pub struct CounterRun {
    run: Option<(SwIfIdx, u64, u64)>,
}

impl CounterRun {
    #[inline]
    pub fn add(&mut self, ifaces: &mut [Option<Interface>], sw: SwIfIdx, bytes: u64, tx: bool) {
        self.add_run(ifaces, sw, 1, bytes, tx);
    }

    /// Adds `packets` packets of `bytes` bytes in all to `sw` (a run counted by its caller).
    #[inline]
    pub fn add_run(
        &mut self,
        ifaces: &mut [Option<Interface>],
        sw: SwIfIdx,
        packets: u64,
        bytes: u64,
        tx: bool,
    ) {
        if packets == 0 {
            return;
        }
        match self.run.as_mut() {
            Some((s, n, b)) if *s == sw => {
                *n += packets;
                *b += bytes;
            }
            _ => {
                self.flush(ifaces, tx);
                self.run = Some((sw, packets, bytes));
            }
        }
    }

    pub fn flush(&mut self, ifaces: &mut [Option<Interface>], tx: bool) {
        if let Some((sw, n, b)) = self.run.take() {
            if let Some(i) = ifaces.get_mut(sw as usize).and_then(Option::as_mut) {
                if tx {
                    i.counters.tx_packets += n;
                    i.counters.tx_bytes += b;
                } else {
                    i.counters.rx_packets += n;
                    i.counters.rx_bytes += b;
                }
            }
        }
    }
}

/// The sub-interfaces of one parent, for classification.
#[derive(Debug, Clone, Default)]
pub struct ParentTable {
    /// The parent's name when the table was built: a port deleted and another added at its index
    /// is not the parent (`Switch::delete_port` does not know about sub-interfaces).
    pub parent_name: String,
    dot1q: VidTable,
    dot1ad: VidTable,
    default: Option<SwIfIdx>,
    untagged: Option<SwIfIdx>,
}

/// Why two sub-interfaces cannot share a parent: the second would match what the first does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The sub-interface already there.
    pub existing: SwIfIdx,
}

impl ParentTable {
    /// An empty table for the parent called `parent_name`.
    pub fn new(parent_name: &str) -> ParentTable {
        ParentTable {
            parent_name: parent_name.to_string(),
            ..Default::default()
        }
    }

    /// Adds sub-interface `sw` matching `m`; refuses (changing nothing) a match another
    /// sub-interface of this parent already has (VPP refuses a second sub-interface on the same
    /// slot).
    pub fn insert(&mut self, sw: SwIfIdx, m: SubMatch) -> Result<(), Duplicate> {
        let taken = |s: Option<SwIfIdx>| s.map_or(Ok(()), |existing| Err(Duplicate { existing }));
        match m {
            SubMatch::Default => {
                taken(self.default)?;
                self.default = Some(sw);
            }
            SubMatch::Untagged => {
                taken(self.untagged)?;
                self.untagged = Some(sw);
            }
            SubMatch::Tagged {
                dot1ad,
                outer,
                inner,
                exact,
            } => {
                let table = if dot1ad {
                    &mut self.dot1ad
                } else {
                    &mut self.dot1q
                };
                if let Some(e) = table.get(outer) {
                    match inner {
                        InnerMatch::None => taken(e.single.map(|s| s.0))?,
                        InnerMatch::Any => taken(e.inner_any)?,
                        InnerMatch::Vid(v) => {
                            taken(e.qinq.iter().find(|&&(i, _)| i == v).map(|&(_, s)| s))?
                        }
                    }
                }
                let e = table.entry(outer);
                match inner {
                    InnerMatch::None => e.single = Some((sw, exact)),
                    InnerMatch::Any => e.inner_any = Some(sw),
                    InnerMatch::Vid(v) => e.qinq.push((v, sw)),
                }
            }
        }
        Ok(())
    }

    /// The interface a frame with tags `k` received on `main` belongs to, in VPP's order: exact
    /// Q-in-Q, outer with any inner, single tag (not for two tags when `exact-match`), `default`,
    /// then the untagged slot — the `untagged` sub-interface (untagged frames only) or else the
    /// main interface (untagged frames; any frame when `main_l2`). `None`: no interface
    /// (`unknown-vlan`).
    #[inline]
    pub fn classify(&self, k: TagKey, main: SwIfIdx, main_l2: bool) -> Option<SwIfIdx> {
        if k.count > 0 {
            // A lone priority tag (VID 0) matches no VLAN (VPP clears MATCH_1_TAG for it) but
            // still reaches the untagged slot.
            let priority = k.count == 1 && k.outer == 0;
            // VPP `eth_vlan_table_lookups`: 0x88a8 outer tags in the dot1ad table, any other TPID
            // (0x8100, the legacy 0x9100) in the dot1q table.
            let table = match k.outer_tpid {
                EtherType::QINQ => &self.dot1ad,
                _ => &self.dot1q,
            };
            if let Some(e) = table.get(k.outer) {
                if k.count == 2 {
                    if let Some(&(_, s)) = e.qinq.iter().find(|&&(i, _)| i == k.inner) {
                        return Some(s);
                    }
                    if let Some(s) = e.inner_any {
                        return Some(s);
                    }
                }
                if let Some((s, exact)) = e.single {
                    if k.count == 1 || !exact {
                        return Some(s);
                    }
                }
            }
            if let Some(d) = self.default {
                return Some(d);
            }
            if priority {
                return Some(self.untagged.unwrap_or(main));
            }
            return match self.untagged {
                Some(_) => None,
                None if main_l2 => Some(main),
                None => None,
            };
        }
        Some(self.untagged.unwrap_or(main))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 60-byte frame with `tags` (TPID, VID) after the addresses, then IPv4's EtherType.
    fn frame(tags: &[(u16, u16)]) -> Vec<u8> {
        let mut f: Vec<u8> = (1..=12).collect();
        for &(tpid, vid) in tags {
            f.extend_from_slice(&tpid.to_be_bytes());
            f.extend_from_slice(&vid.to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        f.resize(60, 0xee);
        f
    }

    /// Every pop (0–2) × push (0–2) on frames with 0–2 tags: the bytes are what popping and
    /// pushing by hand gives, and the key `rewrite` returns is the key read back from them.
    #[test]
    fn rewrite_moves_the_addresses_writes_the_tags_and_returns_the_new_key() {
        let pushes = [
            push_tag(EtherType::QINQ, 300),
            push_tag(EtherType::VLAN, 400),
        ];
        let stacks: [&[(u16, u16)]; 3] = [&[], &[(0x8100, 10)], &[(0x88a8, 100), (0x8100, 20)]];
        let mut pool = Pool::new(4);
        for tags in stacks {
            for pop in 0..=2u8 {
                for n in 0..=2u8 {
                    let vtr = Vtr::new(pop, pushes, n);
                    let bytes = frame(tags);
                    let h = vecswitch_ports_free_alloc(&mut pool, &bytes);
                    let key = read_tags(pool.data(h)).unwrap();
                    let got = rewrite(&mut pool, h, &vtr, key);
                    let left = tags.len() as i32 - pop as i32 + n as i32;
                    if (pop as usize) > tags.len() {
                        assert_eq!(got, Err(RewriteError::TooFewTags));
                        assert_eq!(pool.data(h), &bytes[..], "unchanged");
                    } else if left > 2 {
                        assert_eq!(got, Err(RewriteError::TooManyTags));
                        assert_eq!(pool.data(h), &bytes[..], "unchanged");
                    } else {
                        let mut want: Vec<(u16, u16)> = pushes[..n as usize]
                            .iter()
                            .map(|t| (t.tpid.0, t.vid))
                            .collect();
                        want.extend_from_slice(&tags[pop as usize..]);
                        // The addresses, the new tags, then everything after the old tags.
                        let mut expect = bytes[..12].to_vec();
                        for (tpid, vid) in &want {
                            expect.extend_from_slice(&tpid.to_be_bytes());
                            expect.extend_from_slice(&vid.to_be_bytes());
                        }
                        expect.extend_from_slice(&bytes[12 + 4 * tags.len()..]);
                        assert_eq!(pool.data(h), &expect[..], "{tags:?} pop {pop} push {n}");
                        assert_eq!(got, Ok(read_tags(pool.data(h)).unwrap()));
                        assert_eq!(pool.header(h).total_len as usize, expect.len());
                    }
                    pool.free(h);
                }
            }
        }
    }

    #[test]
    fn rewrite_without_headroom_changes_nothing() {
        let mut pool = Pool::new(1);
        let h = vecswitch_ports_free_alloc(&mut pool, &frame(&[]));
        // Move the frame to the very start of its buffer: no room for a tag.
        let off = pool.header(h).data_offset as usize;
        pool.push_front(h, off);
        let before = pool.data(h).to_vec();
        let vtr = Vtr::new(0, [push_tag(EtherType::VLAN, 5); 2], 1);
        let key = read_tags(pool.data(h)).unwrap();
        assert_eq!(
            rewrite(&mut pool, h, &vtr, key),
            Err(RewriteError::NoHeadroom)
        );
        assert_eq!(pool.data(h), &before[..]);
    }

    /// Tag bytes that compare equal promise the same key and the same parse: checked over every
    /// pair of a set of frames with 0–3 tags, each TPID, priority bits, a length type, cuts.
    #[test]
    fn equal_tag_bytes_mean_equal_tags_and_parse() {
        let stacks: [&[(u16, u16)]; 8] = [
            &[],
            &[(0x8100, 10)],
            &[(0x8100, 11)],
            &[(0x88a8, 10)],
            &[(0x9100, 10)],
            &[(0x88a8, 100), (0x8100, 20)],
            &[(0x88a8, 100), (0x8100, 21)],
            &[(0x8100, 1), (0x8100, 2), (0x8100, 3)],
        ];
        let mut frames = Vec::new();
        for tags in stacks {
            let f = frame(tags);
            let after = 12 + 4 * tags.len();
            let mut pcp = f.clone();
            pcp[14] |= 0xf0;
            let mut llc = f.clone();
            llc[after..after + 2].copy_from_slice(&40u16.to_be_bytes());
            let mut arp = f.clone();
            arp[after..after + 2].copy_from_slice(&0x0806u16.to_be_bytes());
            for cut in [after + 2, after, 20, 19, 14] {
                frames.push(f[..cut.min(f.len())].to_vec());
            }
            frames.extend([f, pcp, llc, arp]);
        }
        let mut compared = 0;
        for a in &frames {
            let Ok(ka) = read_tags(a) else {
                continue;
            };
            let Some(tb) = TagBytes::of(a, ka.count) else {
                // Short frames and 802.3 lengths are decided frame by frame.
                let at = 12 + 4 * ka.count as usize;
                let ty = EtherType(u16::from_be_bytes([a[at], a[at + 1]]));
                assert!(a.len() < 20 || ty.is_length(), "{a:x?}");
                continue;
            };
            let pa = L2Header::parse(a).expect("a frame with tag bytes parses");
            for b in &frames {
                // The fixed-window comparison of the egress fast path agrees, wherever the frame
                // starts in the window.
                for f in [0, 4, 8] {
                    let mut w = [0u8; 32];
                    let k = b.len().min(32 - f);
                    w[f..f + k].copy_from_slice(&b[..k]);
                    let fast = b.len() >= tb.min_len() && tb.matches_window(&w, f);
                    assert_eq!(fast, tb.matches(b), "window at {f}: {a:x?} / {b:x?}");
                }
                if tb.matches(b) {
                    compared += 1;
                    assert_eq!(read_tags(b), Ok(ka), "{a:x?} / {b:x?}");
                    let pb = L2Header::parse(b).expect("parses as `a` does");
                    assert_eq!(
                        (
                            pb.outer.map(|t| (t.tpid, t.vid)),
                            pb.inner.map(|t| (t.tpid, t.vid))
                        ),
                        (
                            pa.outer.map(|t| (t.tpid, t.vid)),
                            pa.inner.map(|t| (t.tpid, t.vid))
                        )
                    );
                    assert_eq!((pb.ethertype, pb.l3_offset), (pa.ethertype, pa.l3_offset));
                    assert_eq!(tb.ethertype(), pa.ethertype.0);
                }
            }
        }
        assert!(
            compared > frames.len() / 2,
            "the test compared too little: {compared}"
        );
        let plain = frame(&[(0x8100, 10)]);
        let mut pcp = plain.clone();
        pcp[14] |= 0xf0;
        let tb = TagBytes::of(&plain, 1).unwrap();
        assert!(tb.matches(&pcp));
        assert!(!tb.matches(&plain[..19]), "too short to compare");
        assert!(!tb.matches(&frame(&[(0x8100, 11)])));
        assert!(!tb.matches(&frame(&[(0x8100, 10), (0x8100, 2)])));
        assert!(TagBytes::of(&plain[..19], 1).is_none());
    }

    /// `shift_tags` at the smallest headroom it needs: a push of two tags onto a frame 8 bytes
    /// from the buffer's start works and leaves it at 0; one byte less and nothing changes.
    #[test]
    fn shift_tags_at_the_edge_of_the_headroom() {
        let vtr = Vtr::new(
            0,
            [
                push_tag(EtherType::QINQ, 300),
                push_tag(EtherType::VLAN, 400),
            ],
            2,
        );
        let f = frame(&[]);
        let mut raw = vec![0u8; 8 + f.len()];
        raw[8..].copy_from_slice(&f);
        assert_eq!(shift_tags(&mut raw, 8, &vtr), Some(0));
        let mut want = f[..12].to_vec();
        want.extend_from_slice(&[0x88, 0xa8, 0x01, 0x2c, 0x81, 0x00, 0x01, 0x90]);
        want.extend_from_slice(&f[12..]);
        assert_eq!(raw, want);
        let mut raw = vec![0u8; 7 + f.len()];
        raw[7..].copy_from_slice(&f);
        let before = raw.clone();
        assert_eq!(shift_tags(&mut raw, 7, &vtr), None);
        assert_eq!(raw, before);
    }

    /// A buffer holding `bytes` at the usual headroom.
    fn vecswitch_ports_free_alloc(pool: &mut Pool, bytes: &[u8]) -> u32 {
        let h = pool.alloc().expect("a free buffer");
        assert!(pool.write_packet(h, bytes));
        h
    }
}
