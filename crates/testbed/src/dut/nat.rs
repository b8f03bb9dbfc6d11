//! NAT44 DUTs for the session-scale sweep (docs/suites/nat-scale.toml, issue 11's "NAT44
//! throughput with 1k/64k/1M sessions … compare with … nftables NAT … in the same run"):
//! the router plan of [`crate::dut::router`] with source NAT (masquerade) from the ingress
//! (inside) to the egress (outside) interface.
//!
//! | name | device | links |
//! |---|---|---|
//! | `vecswitch-router-nat` | vecswitch-router (one route, 16.0.0.0/32) plus `[nat44]`: ingress inside, egress outside (masquerade to 198.19.0.254) | memif, veth (AF_PACKET) |
//! | `linux-router-nat` | linux-router plus the chain's nftables rule (`oifname EGRESS masquerade`, the `kernel-router-nat` VNF's) | veth |
//!
//! **Sessions** ([`Scale::Sessions`]): the generator's traffic from port 0 (inside) is spread
//! over N distinct UDP 5-tuples, one NAT session each, all from one inside host (198.18.0.1) to
//! one remote address (16.0.0.0): P source ports × D destination ports ([`session_split`]: P·D =
//! N, gcd(P, D) = 1, so frame `k`'s flow (k mod P, k mod D) visits every pair once per N frames
//! by the Chinese remainder theorem; P ≤ [`MAX_SRC_PORTS`]). Every session's outside tuple is
//! distinct with its own source port kept (both NATs preserve the port when it is free), so no
//! port is searched for. Each point uses its own block of destination ports
//! ([`DST_PORT_BASE`] + 1024·point index), so its sessions are new ones, not the last point's.
//!
//! The first trial at a point creates the sessions (the lab's throughput search has no separate
//! learning trial); sessions live 3600 s (UDP timeout raised on both devices, RFC 4787 REQ-5's
//! 2 min is a minimum), so the later trials of the point find them. A trial of R frames/s for t
//! seconds visits min(R·t, N) sessions (frame `k` is flow `k mod N`).
//!
//! **Sessions held**: before each point the driver reads the table's count (vecswitch
//! `show nat44 summary`, the kernel's `/proc/sys/net/netfilter/nf_conntrack_count` in the DUT
//! namespace); the sessions a point made are the next reading minus this one, and the placement
//! note lists them per point ([`SessionPoint`]): a point whose table did not hold its sessions
//! shows fewer there (and its frames beyond the limit are drops, so its throughput is 0).
//!
//! **New sessions** (the new-session rate, a throughput test with `flow_mode = "unique"`): when
//! the streams come with [`FlowOrder::Unique`] the driver shapes them over [`MAX_SRC_PORTS`]
//! source ports × 1024 destination ports of their own block ([`NEW_SESSION_DST_PORT`],
//! [`shape_new_sessions`]: 65,536,000 tuples, none a point's), so that every frame opens a new
//! session, and before **every** trial it reads the table's count (the sessions the previous trial
//! made), empties the new sessions out and reads the count again ([`NewSessionTrial`]): a trial
//! starts with room and the table never fills across the trials of a search. vecswitch: the new
//! sessions leave from a pool address of their own ([`NEW_SESSION_POOL_ADDR`], `ctl nat44 pool
//! add`), and `nat44 pool del` of it removes exactly them (the points' sessions, on the interface
//! address, stay); `max_sessions` is raised by [`NEW_SESSION_ROOM`] per trial. The kernel:
//! `conntrack -F` in the DUT namespace (the Debian package `conntrack`) empties its table. The
//! placement note lists the sessions each new-session trial created: with no warm-up (the bench
//! sends none) a trial's count equals the frames it delivered when each frame made a session
//! (more when the device made sessions for frames it then lost on the way out). The points'
//! last reading is the count before the first new-session trial emptied anything.
//!
//! Limits: vecswitch's `max_sessions` and `max_sessions_per_host` are raised to the table's
//! count plus the point (`ctl nat44 set`). The kernel's conntrack table size is host-wide
//! (`net.netfilter.nf_conntrack_max` and the `nf_conntrack` module's `hashsize` can only be set
//! from the initial namespace): the driver raises them (never lowers) to
//! [`KERNEL_CONNTRACK_MAX`] and [`KERNEL_CONNTRACK_BUCKETS`] and says so on stderr; without
//! room the kernel evicts unreplied entries (early drop) or drops new ones.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::sync::Mutex;

use vecswitch_gen::{Field, FieldMode, FieldRange, FlowOrder, StreamSpec};
use vecswitch_switch::nat44::ctl::Nat44Show;

use crate::dut::counters::DeviceCounters;
use crate::dut::linux_router::LinuxRouterDut;
use crate::dut::router::{self, EGRESS_ADDR};
use crate::dut::vecswitch::{Mode, VecswitchDut};
use crate::dut::{Dut, Scale};
use crate::error::{Error, Result};
use crate::placement::PlacedProcess;
use crate::topology::{PortEnd, Wiring};

/// The inside host every session comes from (the generator's port 0 side, in the ingress subnet).
pub const INSIDE_HOST: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The first source port of the sessions.
pub const SRC_PORT_BASE: u16 = 1024;
/// Most source ports per destination port (1024 + 64,000 stays below 65,536).
pub const MAX_SRC_PORTS: u32 = 64_000;
/// The first destination port of point 0's sessions; point `i` starts 1024·`i` higher.
pub const DST_PORT_BASE: u16 = 2048;
/// Points a driver can hold before the destination-port blocks run out.
pub const MAX_POINTS: u32 = 60;
/// Most sessions a point may ask for: the generator's flow limit.
pub const MAX_SESSIONS: u32 = vecswitch_gen::flow::MAX_FLOWS;
/// UDP idle timeout set on both devices (seconds).
pub const UDP_TIMEOUT_S: u32 = 3600;
/// The kernel's conntrack limit the driver raises the host's to (1M point + earlier points).
pub const KERNEL_CONNTRACK_MAX: u64 = 2_097_152;
/// The kernel's conntrack hash buckets the driver raises the host's to.
pub const KERNEL_CONNTRACK_BUCKETS: u64 = 1_048_576;

/// The first destination port of the new-session trials' block (1024 ports after the points'
/// [`MAX_POINTS`] blocks, so no new session is a point's).
pub const NEW_SESSION_DST_PORT: u16 = DST_PORT_BASE + 1024 * MAX_POINTS as u16;
// The block fits below 65,536 and starts after the last point's.
const _: () = assert!(NEW_SESSION_DST_PORT as u32 + 1024 <= 65_536);
const _: () =
    assert!(NEW_SESSION_DST_PORT >= DST_PORT_BASE + 1024 * (MAX_POINTS as u16 - 1) + 1024);
/// Sessions a new-session trial may make before `session-limit` drops (vecswitch's
/// `max_sessions` is the table's count plus this; the kernel's is [`KERNEL_CONNTRACK_MAX`]).
pub const NEW_SESSION_ROOM: u64 = 4_000_000;
/// The outside address of vecswitch's new sessions (a pool of one; see the module doc).
pub const NEW_SESSION_POOL_ADDR: Ipv4Addr = Ipv4Addr::new(198, 19, 0, 253);

/// Shapes the (already routed) streams for new sessions: source [`INSIDE_HOST`], destination
/// [`router::ROUTE_BASE`], [`MAX_SRC_PORTS`] source ports × 1024 destination ports from
/// [`NEW_SESSION_DST_PORT`], unique order (frame `n` is tuple `base + n`, the source port the
/// fastest digit; the generator never repeats one).
pub fn shape_new_sessions(streams: &mut [StreamSpec]) {
    for s in streams.iter_mut() {
        shape_tuples(s, NEW_SESSION_DST_PORT, MAX_SRC_PORTS, 1024);
        s.flows = 1;
        s.order = FlowOrder::Unique;
    }
}

/// One stream's tuples: source [`INSIDE_HOST`] port [`SRC_PORT_BASE`] onward, destination
/// [`router::ROUTE_BASE`] port `dst_port` onward, `src_ports` × `dst_ports` ports incremented
/// (the stream's other address and port ranges dropped).
fn shape_tuples(s: &mut StreamSpec, dst_port: u16, src_ports: u32, dst_ports: u32) {
    s.src_ip = IpAddr::V4(INSIDE_HOST);
    s.dst_ip = IpAddr::V4(router::ROUTE_BASE);
    s.src_port = SRC_PORT_BASE;
    s.dst_port = dst_port;
    s.ranges.retain(|r| {
        !matches!(
            r.field,
            Field::SrcIp | Field::DstIp | Field::SrcPort | Field::DstPort
        )
    });
    for (field, count) in [(Field::SrcPort, src_ports), (Field::DstPort, dst_ports)] {
        s.ranges.push(FieldRange {
            field,
            count,
            mode: FieldMode::Increment,
        });
    }
}

/// Whether the streams ask for new sessions ([`FlowOrder::Unique`], `flow_mode = "unique"`).
fn wants_new_sessions(streams: &[StreamSpec]) -> bool {
    streams.iter().any(|s| s.order == FlowOrder::Unique)
}

/// One new-session trial: the table's count right after it was emptied for the trial and, once
/// read before the next trial, the count the trial left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewSessionTrial {
    pub start: u64,
    pub end: Option<u64>,
}

/// The new-session trials of a driver (behind a lock: `shape_streams` takes `&self`).
#[derive(Debug, Default)]
pub struct NewSessionLog {
    /// Whether the device is set up for new sessions (vecswitch: the pool address is on).
    pub active: bool,
    pub trials: Vec<NewSessionTrial>,
    /// The table's count before the first new-session trial emptied anything: the session
    /// points' last reading (the kernel's flush empties their sessions too).
    pub before_first: Option<u64>,
}

impl NewSessionLog {
    /// Before a trial: the previous trial left `left` sessions; the table holds `start` now.
    pub fn next_trial(&mut self, left: u64, start: u64) {
        match self.trials.last_mut() {
            Some(t) => t.end = Some(left),
            None => self.before_first = Some(left),
        }
        self.trials.push(NewSessionTrial { start, end: None });
    }

    /// Sessions each trial created (`now`: a live reading for the last trial).
    pub fn created(&self, now: Option<u64>) -> Vec<Option<u64>> {
        let n = self.trials.len();
        self.trials
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let end = if i + 1 == n { t.end.or(now) } else { t.end };
                end.map(|e| e.saturating_sub(t.start))
            })
            .collect()
    }

    /// `"; sessions created per new-session trial (table emptied before each): [3000, 2950]"`,
    /// or nothing without such trials.
    pub fn note(&self, now: Option<u64>) -> String {
        if self.trials.is_empty() {
            return String::new();
        }
        let v: Vec<String> = self
            .created(now)
            .iter()
            .map(|c| c.map_or("?".into(), |c| c.to_string()))
            .collect();
        format!(
            "; sessions created per new-session trial (table emptied before each): [{}]",
            v.join(", ")
        )
    }
}

/// The counts of a note's new-session list ([`NewSessionLog::note`]), for tests.
pub fn parse_new_session_note(note: &str) -> Option<Vec<u64>> {
    let (_, rest) = note.split_once("per new-session trial (table emptied before each): [")?;
    let (list, _) = rest.split_once(']')?;
    list.split(", ").map(|x| x.trim().parse().ok()).collect()
}

fn lock(l: &Mutex<NewSessionLog>) -> std::sync::MutexGuard<'_, NewSessionLog> {
    l.lock().unwrap_or_else(|e| e.into_inner())
}

/// How `n` sessions are made: `(source ports P, destination ports D)` with P·D = `n`, gcd = 1,
/// P ≤ [`MAX_SRC_PORTS`], D as small as that allows.
pub fn session_split(n: u32) -> Result<(u32, u32)> {
    let bad = |why: &str| Error::Invalid {
        field: "sessions",
        value: n.to_string(),
        expected: format!("1..={MAX_SESSIONS} sessions {why}"),
    };
    if n == 0 || n > MAX_SESSIONS {
        return Err(bad("(the generator's flow limit)"));
    }
    if n <= MAX_SRC_PORTS {
        return Ok((n, 1));
    }
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    (n.div_ceil(MAX_SRC_PORTS)..=1024)
        .find(|&d| n.is_multiple_of(d) && n / d <= MAX_SRC_PORTS && gcd(n / d, d) == 1)
        .map(|d| (n / d, d))
        .ok_or_else(|| {
            bad(
                "that split into P source × D destination ports with P ≤ 64000, D ≤ 1024 and \
                 gcd(P, D) = 1 (1000, 64000 and 1000000 do)",
            )
        })
}

/// Shapes the (already routed, [`router::shape`]) streams for `n` sessions of point `index`:
/// source [`INSIDE_HOST`], destination [`router::ROUTE_BASE`], P source ports × D destination
/// ports ([`session_split`]), `n` flows.
pub fn shape_sessions(streams: &mut [StreamSpec], n: u32, index: u32) -> Result<()> {
    let (p, d) = session_split(n)?;
    if index >= MAX_POINTS {
        return Err(Error::Invalid {
            field: "session points",
            value: (index + 1).to_string(),
            expected: format!("at most {MAX_POINTS} points per run (destination-port blocks)"),
        });
    }
    for s in streams.iter_mut() {
        shape_tuples(s, DST_PORT_BASE + 1024 * index as u16, p, d);
        s.flows = n;
    }
    Ok(())
}

/// One session point: its sessions, the table's count before it, and (once the next point or
/// the placement note read it) the count after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPoint {
    pub sessions: u32,
    pub before: u64,
    pub after: Option<u64>,
}

impl SessionPoint {
    /// `"1000 sessions: 1000 held"`; `after_now` is a live reading for the last point.
    pub fn describe(&self, after_now: Option<u64>) -> String {
        match self.after.or(after_now) {
            Some(a) => {
                let held = a.saturating_sub(self.before);
                let short = if held < u64::from(self.sessions) {
                    " — NOT all held"
                } else {
                    ""
                };
                format!("{} sessions: {held} held{short}", self.sessions)
            }
            None => format!("{} sessions: count unknown", self.sessions),
        }
    }

    /// The points as a placement note's list, the last with `now`.
    pub fn list(points: &[SessionPoint], now: Option<u64>) -> String {
        let n = points.len();
        points
            .iter()
            .enumerate()
            .map(|(i, p)| p.describe(if i + 1 == n { now } else { None }))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Records a new point after reading the table's count `count`.
fn push_point(points: &mut Vec<SessionPoint>, sessions: u32, count: u64) {
    if let Some(last) = points.last_mut() {
        last.after = Some(count);
    }
    if !points.is_empty() {
        eprintln!("nat: {}", SessionPoint::list(points, Some(count)));
    }
    eprintln!("nat: next point {sessions} sessions (the table holds {count})");
    points.push(SessionPoint {
        sessions,
        before: count,
        after: None,
    });
}

/// The session count of `scale`, checked ([`session_split`]); other kinds are refused.
fn sessions_of(dut: &str, scale: Scale) -> Result<u32> {
    let Scale::Sessions(n) = scale else {
        return Err(Error::Unsupported {
            dut: dut.into(),
            what: format!("{scale:?}"),
            why: "the NAT DUTs scale sessions (scale kind `sessions`)".into(),
        });
    };
    session_split(n).map(|_| n)
}

/// Shapes `streams` for the last of `points` (unchanged before the first).
fn shape_last_point(points: &[SessionPoint], streams: &mut [StreamSpec]) -> Result<()> {
    match points.last() {
        Some(p) => shape_sessions(streams, p.sessions, points.len() as u32 - 1),
        None => Ok(()),
    }
}

/// Fails naming the package when `nft` is missing (the kernel NAT and firewall DUTs).
pub(crate) fn require_nft(dut: &str, what: &str) -> Result<()> {
    if crate::cmd::have("nft") {
        return Ok(());
    }
    Err(Error::Unsupported {
        dut: dut.into(),
        what: what.into(),
        why: "nft not found; install the Debian package nftables (make setup)".into(),
    })
}

/// The placement records `v` with `extra` appended to each note (and renamed to `name`).
pub(crate) fn with_note(
    mut v: Vec<PlacedProcess>,
    name: Option<&str>,
    extra: &str,
) -> Vec<PlacedProcess> {
    for p in &mut v {
        if let Some(n) = name {
            p.name = n.into();
        }
        p.note = format!("{}; {extra}", p.note);
    }
    v
}

/// The session bookkeeping both NAT DUTs keep (module doc): the session points and the
/// new-session trials.
#[derive(Debug, Default)]
struct SessionBook {
    points: Vec<SessionPoint>,
    new_sessions: Mutex<NewSessionLog>,
}

impl SessionBook {
    /// Shapes the streams (already routed by the inner router) for new sessions when they ask for
    /// them, after `trial(unique)` readied the device for a new-session trial (or, with `false`,
    /// left that setup); otherwise for the last session point.
    fn shape_streams(
        &self,
        streams: &mut [StreamSpec],
        trial: impl FnOnce(bool) -> Result<()>,
    ) -> Result<()> {
        let unique = wants_new_sessions(streams);
        trial(unique)?;
        if unique {
            shape_new_sessions(streams);
            return Ok(());
        }
        shape_last_point(&self.points, streams)
    }

    /// The placement note: `"{label}: 1000 sessions: 1000 held"` and the new-session trials'
    /// counts, `now` a live reading of the table's count.
    fn note(&self, label: &str, now: Option<u64>) -> String {
        let log = lock(&self.new_sessions);
        format!(
            "{label}: {}{}",
            SessionPoint::list(&self.points, log.before_first.or(now)),
            log.note(now)
        )
    }
}

/// `sessions` from a `ctl --json show nat44 summary` answer (the switch's own
/// [`Nat44Show::Summary`]).
pub fn summary_sessions(json: &str) -> Option<u64> {
    match crate::dut::vecswitch::answer_data::<Nat44Show>(json)? {
        Nat44Show::Summary(s) => u64::try_from(s.sessions).ok(),
        Nat44Show::Sessions(_) => None,
    }
}

/// `vecswitch-router-nat`: [`VecswitchDut`] in router mode with NAT44 set on its interfaces
/// through `ctl` (see the module doc).
#[derive(Debug)]
pub struct VecswitchNatDut {
    bin: PathBuf,
    inner: VecswitchDut,
    wiring: Option<Wiring>,
    book: SessionBook,
}

impl VecswitchNatDut {
    pub fn new(bin: PathBuf) -> VecswitchNatDut {
        VecswitchNatDut {
            inner: VecswitchDut::new(bin.clone(), Mode::Router),
            bin,
            wiring: None,
            book: SessionBook::default(),
        }
    }

    fn ctl(&self, w: &Wiring, args: &[&str]) -> Result<String> {
        let sock = w.run_dir.join("dut.ctl").display().to_string();
        let mut a = vec!["ctl", "--socket", &sock, "--timeout", "10"];
        a.extend_from_slice(args);
        crate::cmd::run(&self.bin.display().to_string(), &a)
    }

    /// Sessions in the table now.
    pub fn sessions(&self) -> Result<u64> {
        let w = self.state()?;
        let out = self.ctl(&w, &["--json", "show", "nat44", "summary"])?;
        summary_sessions(&out).ok_or_else(|| Error::Invalid {
            field: "vecswitch show nat44 summary",
            value: out.chars().take(200).collect(),
            expected: "JSON with data.sessions (docs/NAT.md)".into(),
        })
    }

    fn state(&self) -> Result<Wiring> {
        self.wiring.clone().ok_or_else(|| Error::Invalid {
            field: "vecswitch-router-nat state",
            value: "not set up".into(),
            expected: "configure_scale after setup".into(),
        })
    }

    fn set(&self, w: &Wiring, key: &str, value: u64) -> Result<()> {
        self.ctl(w, &["nat44", "set", key, &value.to_string()])
            .map(|_| ())
    }

    fn pool(&self, w: &Wiring, op: &str) -> Result<()> {
        let a = NEW_SESSION_POOL_ADDR.to_string();
        self.ctl(w, &["nat44", "pool", op, &a]).map(|_| ())
    }

    /// Before a new-session trial (module doc): the previous trial's sessions out (`pool del`
    /// removes the sessions on the pool address), room for this one, the counts recorded.
    /// With `unique` false, leaves the new-session setup if it was on.
    fn new_session_trial(&self, unique: bool) -> Result<()> {
        let w = self.state()?;
        let mut log = lock(&self.book.new_sessions);
        if !unique {
            if log.active {
                self.pool(&w, "del")?;
                log.active = false;
            }
            return Ok(());
        }
        let left = self.sessions()?;
        if log.active {
            self.pool(&w, "del")?;
        }
        let start = self.sessions()?;
        let room = start + NEW_SESSION_ROOM;
        self.set(&w, "max_sessions", room)?;
        self.set(&w, "max_sessions_per_host", room)?;
        self.pool(&w, "add")?;
        log.active = true;
        log.next_trial(left, start);
        Ok(())
    }
}

impl Dut for VecswitchNatDut {
    fn name(&self) -> &str {
        "vecswitch-router-nat"
    }

    fn describe(&self) -> String {
        format!("{}, NAT44 masquerade", self.inner.describe())
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        self.inner.setup(w)?;
        let (a, b) = router::routed_pair(self.name(), w)?;
        self.wiring = Some(w.clone());
        self.set(w, "udp_s", u64::from(UDP_TIMEOUT_S))?;
        self.ctl(w, &["nat44", "interface", w.dut_ports[a].name(), "inside"])?;
        self.ctl(w, &["nat44", "interface", w.dut_ports[b].name(), "outside"])?;
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        self.inner.teardown()
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let n = sessions_of(self.name(), scale)?;
        let w = self.state()?;
        let count = self.sessions()?;
        let room = count + u64::from(n);
        self.set(&w, "max_sessions", room)?;
        self.set(&w, "max_sessions_per_host", room)?;
        push_point(&mut self.book.points, n, count);
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        self.inner.shape_streams(streams)?;
        self.book
            .shape_streams(streams, |unique| self.new_session_trial(unique))
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        let note = self.book.note(
            "NAT44 sessions per point (show nat44 summary)",
            self.sessions().ok(),
        );
        with_note(self.inner.processes(), None, &note)
    }

    fn check_alive(&mut self) -> Result<()> {
        self.inner.check_alive()
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        self.inner.counters()
    }
}

/// `linux-router-nat`: [`LinuxRouterDut`] plus nftables masquerade out of the egress interface
/// and the conntrack settings of the module doc.
#[derive(Debug, Default)]
pub struct LinuxNatDut {
    inner: LinuxRouterDut,
    wiring: Option<Wiring>,
    book: SessionBook,
}

/// The nftables script: the `kernel-router-nat` chain VNF's masquerade rule
/// ([`crate::chain`]) out of `egress`.
pub fn masquerade_nft(egress: &str) -> String {
    format!(
        "table ip l7nat {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat;\n    oifname {egress:?} masquerade\n  }}\n}}\n"
    )
}

/// Raises a host-wide sysctl file to at least `want`, saying so; returns what it holds after.
fn raise_host_setting(path: &str, want: u64) -> Result<u64> {
    let read = || -> Result<u64> {
        let s = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: "reading",
            path: path.into(),
            source,
        })?;
        s.trim().parse().map_err(|_| Error::Invalid {
            field: "conntrack setting",
            value: format!("{path}: {s:?}"),
            expected: "a number".into(),
        })
    };
    let now = read()?;
    if now < want {
        std::fs::write(path, want.to_string()).map_err(|source| Error::Io {
            what: "writing",
            path: path.into(),
            source,
        })?;
        eprintln!("linux-router-nat: raised {path} from {now} to {want} (host-wide)");
    }
    read()
}

impl LinuxNatDut {
    pub fn new() -> LinuxNatDut {
        LinuxNatDut::default()
    }

    fn exec(&self, w: &Wiring, args: &[&str]) -> Result<String> {
        let mut a = vec!["netns", "exec", w.dut_netns.as_str()];
        a.extend_from_slice(args);
        crate::cmd::run("ip", &a)
    }

    /// Before a new-session trial (module doc): `conntrack -F` empties the table, the counts
    /// recorded.
    fn new_session_trial(&self, unique: bool) -> Result<()> {
        if !unique {
            return Ok(());
        }
        let w = self.state()?;
        if !crate::cmd::have("conntrack") {
            return Err(Error::Unsupported {
                dut: self.name().into(),
                what: "new sessions (flow_mode = \"unique\")".into(),
                why: "conntrack not found (it empties the table between trials); install the \
                      Debian package conntrack (make setup)"
                    .into(),
            });
        }
        let mut log = lock(&self.book.new_sessions);
        let left = self.sessions()?;
        self.exec(&w, &["conntrack", "-F"])?;
        let start = self.sessions()?;
        log.active = true;
        log.next_trial(left, start);
        Ok(())
    }

    fn state(&self) -> Result<Wiring> {
        self.wiring.clone().ok_or_else(|| Error::Invalid {
            field: "linux-router-nat state",
            value: "not set up".into(),
            expected: "configure_scale after setup".into(),
        })
    }

    /// Conntrack entries in the DUT namespace now.
    pub fn sessions(&self) -> Result<u64> {
        let w = self.state()?;
        let out = self.exec(&w, &["cat", "/proc/sys/net/netfilter/nf_conntrack_count"])?;
        out.trim().parse().map_err(|_| Error::Invalid {
            field: "nf_conntrack_count",
            value: out,
            expected: "a number".into(),
        })
    }
}

impl Dut for LinuxNatDut {
    fn name(&self) -> &str {
        "linux-router-nat"
    }

    fn describe(&self) -> String {
        format!(
            "{}, nftables masquerade ({})",
            self.inner.describe(),
            crate::dut::version_line("nft", &["--version"])
        )
    }

    fn setup(&mut self, w: &Wiring) -> Result<()> {
        require_nft(self.name(), "nftables masquerade")?;
        self.inner.setup(w)?;
        self.wiring = Some(w.clone());
        let (_, b) = router::routed_pair(self.name(), w)?;
        let egress = match &w.dut_ports[b] {
            PortEnd::Veth { ifname, .. } => ifname.clone(),
            p => p.name().to_string(),
        };
        let path = w.run_dir.join("nat.nft");
        std::fs::write(&path, masquerade_nft(&egress)).map_err(|source| Error::Io {
            what: "writing",
            path: path.clone(),
            source,
        })?;
        self.exec(w, &["nft", "-f", &path.display().to_string()])?;
        // The nat table loads nf_conntrack; its per-namespace timeouts exist from then on.
        for kv in [
            format!("net.netfilter.nf_conntrack_udp_timeout={UDP_TIMEOUT_S}"),
            format!("net.netfilter.nf_conntrack_udp_timeout_stream={UDP_TIMEOUT_S}"),
        ] {
            self.exec(w, &["sysctl", "-q", "-w", &kv])?;
        }
        raise_host_setting(
            "/proc/sys/net/netfilter/nf_conntrack_max",
            KERNEL_CONNTRACK_MAX,
        )?;
        raise_host_setting(
            "/sys/module/nf_conntrack/parameters/hashsize",
            KERNEL_CONNTRACK_BUCKETS,
        )?;
        Ok(())
    }

    fn teardown(&mut self) -> Result<()> {
        if let Some(w) = self.wiring.take() {
            let _ = self.exec(&w, &["nft", "delete", "table", "ip", "l7nat"]);
        }
        self.inner.teardown()
    }

    fn configure_scale(&mut self, scale: Scale) -> Result<()> {
        let n = sessions_of(self.name(), scale)?;
        let count = self.sessions()?;
        let max: u64 = std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if count + u64::from(n) > max {
            eprintln!(
                "linux-router-nat: {count} + {n} sessions exceed nf_conntrack_max {max}: the \
                 point will not hold them"
            );
        }
        push_point(&mut self.book.points, n, count);
        Ok(())
    }

    fn shape_streams(&self, streams: &mut [StreamSpec]) -> Result<()> {
        self.inner.shape_streams(streams)?;
        self.book
            .shape_streams(streams, |unique| self.new_session_trial(unique))
    }

    fn processes(&self) -> Vec<PlacedProcess> {
        let note = self.book.note(
            "conntrack entries per point (nf_conntrack_count)",
            self.sessions().ok(),
        );
        with_note(self.inner.processes(), Some("kernel-router-nat"), &note)
    }

    fn counters(&mut self) -> Result<Option<DeviceCounters>> {
        self.inner.counters()
    }
}

impl Drop for LinuxNatDut {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// The outside address both NATs masquerade to.
pub fn outside_addr() -> Ipv4Addr {
    EGRESS_ADDR.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use vecswitch_gen::StreamBuilder;

    #[test]
    fn sessions_split_into_coprime_port_blocks() {
        assert_eq!(session_split(1000).unwrap(), (1000, 1));
        assert_eq!(session_split(64_000).unwrap(), (64_000, 1));
        assert_eq!(session_split(1_000_000).unwrap(), (15_625, 64));
        for bad in [0, 1_000_001, 64_007] {
            let e = session_split(bad).unwrap_err().to_string();
            assert!(e.contains("sessions"), "{e}");
        }
    }

    /// N frames of the shaped stream carry N distinct (source port, destination port) pairs,
    /// inside the point's port block.
    #[test]
    fn shaped_traffic_makes_each_session_once_per_cycle() {
        for (n, index) in [(1000u32, 0u32), (64_000, 1), (200_000, 2)] {
            let mut v = vec![StreamSpec::ipv4(0, 1)];
            router::shape(&mut v, (0, 1), [2, 0xfe, 0, 0, 0, 0], 1).unwrap();
            shape_sessions(&mut v, n, index).unwrap();
            assert_eq!(v[0].flows, n);
            let b = StreamBuilder::new(0, &v[0]).unwrap();
            let mut seen = HashSet::new();
            for k in 0..u64::from(n) {
                let mut f = vec![0u8; b.wire_len(k)];
                b.build(k, 0, false, &mut f);
                assert_eq!(f[26..30], INSIDE_HOST.octets());
                assert_eq!(f[30..34], router::ROUTE_BASE.octets());
                let sp = u16::from_be_bytes([f[34], f[35]]);
                let dp = u16::from_be_bytes([f[36], f[37]]);
                let base = DST_PORT_BASE + 1024 * index as u16;
                assert!((base..base + 1024).contains(&dp), "{dp}");
                assert!(sp >= SRC_PORT_BASE, "{sp}");
                seen.insert((sp, dp));
            }
            assert_eq!(seen.len() as u32, n);
        }
        let mut v = vec![StreamSpec::ipv4(0, 1)];
        assert!(shape_sessions(&mut v, 10, MAX_POINTS).is_err());
    }

    /// New-session shaping: unique order over 64,000 × 1024 tuples in a destination-port block
    /// no point uses; frames never repeat a tuple, also across a base change (the next trial).
    #[test]
    fn new_session_traffic_never_repeats_a_tuple() {
        let mut v = vec![StreamSpec::ipv4(0, 1)];
        router::shape(&mut v, (0, 1), [2, 0xfe, 0, 0, 0, 0], 1).unwrap();
        v[0].order = FlowOrder::Unique;
        assert!(wants_new_sessions(&v));
        shape_new_sessions(&mut v);
        assert_eq!(vecswitch_gen::flow::unique_space(&v[0].ranges), 65_536_000);
        let mut b = StreamBuilder::new(0, &v[0]).unwrap();
        let mut seen = HashSet::new();
        for base in [0u64, 70_000] {
            b.set_unique_base(base);
            for k in 0..70_000u64 {
                let mut f = vec![0u8; b.wire_len(k)];
                b.build(k, 0, false, &mut f);
                assert_eq!(f[26..30], INSIDE_HOST.octets());
                let sp = u16::from_be_bytes([f[34], f[35]]);
                let dp = u16::from_be_bytes([f[36], f[37]]);
                assert!(
                    sp >= SRC_PORT_BASE && dp >= NEW_SESSION_DST_PORT,
                    "{sp} {dp}"
                );
                assert!(seen.insert((sp, dp)), "frame {k} (base {base}) repeats");
            }
        }
        let mut c = vec![StreamSpec::ipv4(0, 1)];
        assert!(!wants_new_sessions(&c));
        shape_sessions(&mut c, 1000, 0).unwrap();
        assert_eq!(c[0].order, FlowOrder::Cycle);
    }

    #[test]
    fn new_session_log_says_what_each_trial_created() {
        let mut log = NewSessionLog::default();
        assert_eq!(log.note(Some(5)), "");
        log.next_trial(1000, 1000);
        assert_eq!(log.before_first, Some(1000));
        log.next_trial(4000, 1000);
        log.next_trial(3500, 0);
        assert_eq!(
            log.created(Some(2999)),
            vec![Some(3000), Some(2500), Some(2999)]
        );
        let note = format!("x; y{}", log.note(None));
        assert!(note.ends_with("[3000, 2500, ?]"), "{note}");
        assert_eq!(parse_new_session_note(&note), None);
        let note = log.note(Some(7));
        assert_eq!(parse_new_session_note(&note), Some(vec![3000, 2500, 7]));
    }

    #[test]
    fn points_say_what_the_table_held() {
        let mut pts = Vec::new();
        push_point(&mut pts, 1000, 0);
        push_point(&mut pts, 64_000, 1000);
        assert_eq!(
            SessionPoint::list(&pts, Some(60_000)),
            "1000 sessions: 1000 held, 64000 sessions: 59000 held — NOT all held"
        );
        assert_eq!(
            SessionPoint::list(&pts[..1], None),
            "1000 sessions: 1000 held"
        );
        let summary = |sessions: usize| {
            let s = vecswitch_switch::nat44::control::Nat44Summary {
                inside_interfaces: vec!["phy0".into()],
                outside_interfaces: vec![("phy1".into(), "198.19.0.254".parse().unwrap())],
                pool: Vec::new(),
                hairpinning: false,
                sessions,
                tcp: 0,
                tcp_established: 0,
                tcp_transitory: 0,
                udp: sessions,
                icmp: 0,
                inside_hosts: 1,
                max_sessions: 1 << 20,
                sessions_created: sessions as u64,
                sessions_expired: 0,
                settings: Default::default(),
                memory: Default::default(),
            };
            serde_json::json!({ "ok": true, "data": Nat44Show::Summary(s) }).to_string()
        };
        assert_eq!(summary_sessions(&summary(1000)), Some(1000));
        assert_eq!(summary_sessions(&summary(64_000)), Some(64_000));
        assert_eq!(summary_sessions("{}"), None);
        // Not the summary's shape (a flat or partial answer): unreadable, not a count.
        let j = r#"{"ok":true,"data":{"inside_interfaces":["phy0"],"sessions":1000,"udp":1000}}"#;
        assert_eq!(summary_sessions(j), None);
        assert!(masquerade_nft("dut1").contains("oifname \"dut1\" masquerade"));
    }
}
