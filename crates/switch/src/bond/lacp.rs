//! LACP per member port (IEEE 802.1AX-2014 §6.4): the receive machine (§6.4.12), the periodic
//! transmit machine (§6.4.13), selection (§6.4.14, one aggregator per bond) and the mux machine
//! with coupled control (§6.4.15, Figure 6-21: collecting and distributing switch together), plus
//! the transmit rate limit (§6.4.16: at most 3 LACPDUs per Fast_Periodic_Time).
//!
//! Everything is driven by the caller's clock in nanoseconds ([`LacpPort::step`] with `now`), so
//! the worker's time drives it (no thread, no timer of its own) and the tests use a fake clock.
//! Read after Linux's `drivers/net/bonding/bond_3ad.c` and VPP's `src/plugins/lacp` (machines of
//! the same standard); written from the standard.

use super::lacpdu::{LacpInfo, LacpState, Lacpdu};
use serde::Serialize;
use vecswitch_wire::EthernetAddress;

const S: u64 = 1_000_000_000;
/// Fast_Periodic_Time (§6.4.4): 1 s between LACPDUs when the partner asks for short timeouts.
pub const FAST_PERIODIC_NS: u64 = S;
/// Slow_Periodic_Time: 30 s.
pub const SLOW_PERIODIC_NS: u64 = 30 * S;
/// Short_Timeout_Time: 3 × fast periodic.
pub const SHORT_TIMEOUT_NS: u64 = 3 * S;
/// Long_Timeout_Time: 3 × slow periodic.
pub const LONG_TIMEOUT_NS: u64 = 90 * S;
/// Aggregate_Wait_Time: 2 s in WAITING before attaching (lets the other links of the aggregate
/// be selected too).
pub const AGGREGATE_WAIT_NS: u64 = 2 * S;
/// At most this many LACPDUs per [`FAST_PERIODIC_NS`] (§6.4.16).
pub const MAX_TX_PER_FAST_PERIOD: usize = 3;

/// The administrative partner used while none is known (DEFAULTED, §6.4.12 recordDefault): all
/// zero but LACP_Timeout short — our choice, so that a port without a partner keeps sending every
/// second and a partner that appears is answered at once rather than within 30 s.
pub fn admin_partner() -> LacpInfo {
    LacpInfo {
        state: LacpState(LacpState::TIMEOUT),
        ..LacpInfo::default()
    }
}

/// LACP rate the actor asks of its partner: `fast` sets LACP_Timeout (short timeouts, the partner
/// sends every second), `slow` every 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LacpRate {
    #[default]
    Fast,
    Slow,
}

/// Receive machine states (§6.4.12, Figure 6-18).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RxState {
    /// The port is down (or not yet enabled).
    PortDisabled,
    /// No LACPDU for one timeout: partner assumed short timeout, synchronization lost.
    Expired,
    /// No partner information: the administrative defaults are used.
    Defaulted,
    /// Partner information received and still valid.
    Current,
}

/// Mux machine states, coupled control (§6.4.15, Figure 6-21).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MuxState {
    Detached,
    Waiting,
    Attached,
    CollectingDistributing,
}

/// LACP counters of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LacpCounters {
    /// LACPDUs received and processed.
    pub rx_lacpdus: u64,
    /// LACPDUs handed to the port.
    pub tx_lacpdus: u64,
    /// LACPDUs that could not be sent (no buffer, port refused).
    pub tx_failed: u64,
    /// Times the partner timed out (CURRENT → EXPIRED).
    pub timeouts: u64,
}

/// One member port's LACP state.
#[derive(Debug, Clone)]
pub struct LacpPort {
    /// Our information as we send it (system = the bond's MAC, key = the bond's key).
    pub actor: LacpInfo,
    /// The partner's operational information.
    pub partner: LacpInfo,
    pub rx: RxState,
    pub mux: MuxState,
    /// Selected for the bond's aggregator (set by the bond's selection logic each step).
    pub selected: bool,
    /// Need To Transmit.
    pub ntt: bool,
    /// The port is usable (link up, admin up), as last told.
    pub enabled: bool,
    current_while: Option<u64>,
    wait_while: Option<u64>,
    next_periodic: u64,
    tx_times: [u64; MAX_TX_PER_FAST_PERIOD],
    pub counters: LacpCounters,
}

impl LacpPort {
    /// A port of system `system` (priority 65535 as Linux's default), aggregation key `key`,
    /// port number `port` (≥ 1), asking the partner for `rate`. Starts disabled.
    pub fn new(system: EthernetAddress, key: u16, port: u16, rate: LacpRate) -> LacpPort {
        let mut state =
            LacpState(LacpState::ACTIVITY | LacpState::AGGREGATION | LacpState::DEFAULTED);
        state.set(LacpState::TIMEOUT, rate == LacpRate::Fast);
        LacpPort {
            actor: LacpInfo {
                system_priority: 0xffff,
                system,
                key,
                port_priority: 0xff,
                port,
                state,
            },
            partner: admin_partner(),
            rx: RxState::PortDisabled,
            mux: MuxState::Detached,
            selected: false,
            ntt: false,
            enabled: false,
            current_while: None,
            wait_while: None,
            next_periodic: 0,
            tx_times: [0; MAX_TX_PER_FAST_PERIOD],
            counters: LacpCounters::default(),
        }
    }

    /// Whether the actor collects and distributes on this port (mux in
    /// COLLECTING_DISTRIBUTING).
    #[inline]
    pub fn distributing(&self) -> bool {
        self.mux == MuxState::CollectingDistributing
    }

    fn timeout_ns(&self) -> u64 {
        if self.actor.state.has(LacpState::TIMEOUT) {
            SHORT_TIMEOUT_NS
        } else {
            LONG_TIMEOUT_NS
        }
    }

    /// Port enabled or disabled (link and admin state). Disabling: PORT_DISABLED, partner
    /// synchronization cleared, unselected (§6.4.12). Enabling: EXPIRED (the partner is asked
    /// for a fast answer).
    pub fn set_enabled(&mut self, on: bool, now: u64) {
        if on == self.enabled {
            return;
        }
        self.enabled = on;
        if on {
            self.enter_expired(now);
            self.next_periodic = now; // transmit at once
        } else {
            self.rx = RxState::PortDisabled;
            self.partner.state.set(LacpState::SYNCHRONIZATION, false);
            self.current_while = None;
            self.selected = false;
            self.mux_detach();
        }
    }

    fn enter_expired(&mut self, now: u64) {
        self.rx = RxState::Expired;
        self.partner.state.set(LacpState::SYNCHRONIZATION, false);
        self.partner.state.set(LacpState::TIMEOUT, true);
        self.actor.state.set(LacpState::EXPIRED, true);
        self.current_while = Some(now + SHORT_TIMEOUT_NS);
    }

    fn enter_defaulted(&mut self) {
        // update_Default_Selected + recordDefault: the administrative partner (all zero) differs
        // from any real partner, so the port is unselected.
        if self.partner != admin_partner() {
            self.selected = false;
        }
        self.partner = admin_partner();
        self.actor.state.set(LacpState::DEFAULTED, true);
        self.actor.state.set(LacpState::EXPIRED, false);
        self.rx = RxState::Defaulted;
        self.current_while = None;
    }

    /// A LACPDU received on this port (receive machine, CURRENT; §6.4.12 recordPDU, update_Selected,
    /// update_NTT).
    pub fn receive(&mut self, pdu: &Lacpdu, now: u64) {
        self.counters.rx_lacpdus += 1;
        if !self.enabled {
            return;
        }
        // update_Selected: a different partner means re-selection.
        if !self.partner.same_port(&pdu.actor) {
            self.selected = false;
        }
        // update_NTT: the partner's view of us is out of date.
        let mask = LacpState::ACTIVITY
            | LacpState::TIMEOUT
            | LacpState::SYNCHRONIZATION
            | LacpState::AGGREGATION;
        if !pdu.partner.same_port(&self.actor)
            || (pdu.partner.state.0 & mask) != (self.actor.state.0 & mask)
        {
            self.ntt = true;
        }
        // recordPDU: the partner's synchronization counts only if it has our information right
        // and we are aggregatable together (or it is individual and in sync).
        let matches = pdu.partner.same_port(&self.actor)
            && pdu.partner.state.has(LacpState::AGGREGATION)
                == self.actor.state.has(LacpState::AGGREGATION);
        let mut p = pdu.actor;
        let in_sync = p.state.has(LacpState::SYNCHRONIZATION)
            && (matches || !p.state.has(LacpState::AGGREGATION));
        p.state.set(LacpState::SYNCHRONIZATION, in_sync);
        self.partner = p;
        self.actor.state.set(LacpState::DEFAULTED, false);
        self.actor.state.set(LacpState::EXPIRED, false);
        self.rx = RxState::Current;
        self.current_while = Some(now + self.timeout_ns());
    }

    /// Runs the timers and the mux machine at time `now`; returns whether a LACPDU is to be sent
    /// now (the caller sends [`LacpPort::lacpdu`] and calls [`LacpPort::sent`]).
    pub fn step(&mut self, now: u64) -> bool {
        if !self.enabled {
            return false;
        }
        // Receive machine timers.
        if self.current_while.is_some_and(|t| now >= t) {
            match self.rx {
                RxState::Current => {
                    self.counters.timeouts += 1;
                    self.enter_expired(now);
                }
                RxState::Expired => self.enter_defaulted(),
                _ => self.current_while = None,
            }
        }
        // Periodic transmit machine (§6.4.13): the partner's LACP_Timeout says how often.
        if now >= self.next_periodic {
            self.ntt = true;
            let period = if self.partner.state.has(LacpState::TIMEOUT) {
                FAST_PERIODIC_NS
            } else {
                SLOW_PERIODIC_NS
            };
            self.next_periodic = now + period;
        }
        self.mux_step(now);
        // Transmit machine: NTT, rate-limited.
        self.ntt
            && self
                .tx_times
                .iter()
                .any(|&t| t == 0 || now >= t + FAST_PERIODIC_NS)
    }

    fn mux_detach(&mut self) {
        if self.mux != MuxState::Detached {
            self.ntt = true;
        }
        self.mux = MuxState::Detached;
        self.wait_while = None;
        for b in [
            LacpState::SYNCHRONIZATION,
            LacpState::COLLECTING,
            LacpState::DISTRIBUTING,
        ] {
            self.actor.state.set(b, false);
        }
    }

    fn mux_step(&mut self, now: u64) {
        // Loop until stable: one event may cross several states (e.g. WAITING → ATTACHED →
        // COLLECTING_DISTRIBUTING when the partner is already in sync).
        for _ in 0..4 {
            let partner_sync = self.partner.state.has(LacpState::SYNCHRONIZATION);
            let next = match self.mux {
                MuxState::Detached if self.selected => Some(MuxState::Waiting),
                MuxState::Waiting if !self.selected => Some(MuxState::Detached),
                MuxState::Waiting if self.wait_while.is_some_and(|t| now >= t) => {
                    Some(MuxState::Attached)
                }
                MuxState::Attached if !self.selected => Some(MuxState::Detached),
                MuxState::Attached if partner_sync => Some(MuxState::CollectingDistributing),
                MuxState::CollectingDistributing if !self.selected || !partner_sync => {
                    Some(MuxState::Attached)
                }
                _ => None,
            };
            let Some(next) = next else { return };
            match next {
                MuxState::Detached => self.mux_detach(),
                MuxState::Waiting => {
                    self.mux = MuxState::Waiting;
                    self.wait_while = Some(now + AGGREGATE_WAIT_NS);
                }
                MuxState::Attached => {
                    self.mux = MuxState::Attached;
                    self.wait_while = None;
                    self.actor.state.set(LacpState::SYNCHRONIZATION, true);
                    self.actor.state.set(LacpState::COLLECTING, false);
                    self.actor.state.set(LacpState::DISTRIBUTING, false);
                    self.ntt = true;
                }
                MuxState::CollectingDistributing => {
                    self.mux = MuxState::CollectingDistributing;
                    self.actor.state.set(LacpState::COLLECTING, true);
                    self.actor.state.set(LacpState::DISTRIBUTING, true);
                    self.ntt = true;
                }
            }
        }
    }

    /// The LACPDU to send now.
    pub fn lacpdu(&self) -> Lacpdu {
        Lacpdu {
            version: 1,
            actor: self.actor,
            partner: self.partner,
            collector_max_delay: 0,
        }
    }

    /// The LACPDU was handed to the port (`ok`) or could not be.
    pub fn sent(&mut self, now: u64, ok: bool) {
        if !ok {
            self.counters.tx_failed += 1;
            return;
        }
        self.counters.tx_lacpdus += 1;
        self.ntt = false;
        // Replace the oldest transmit time.
        if let Some(t) = self.tx_times.iter_mut().min() {
            *t = now.max(1);
        }
    }
}

/// Selection for one aggregator (§6.4.14, simplified to the one aggregator a bond has): the
/// aggregator takes the partner (system, priority, key) of the first port in member order whose
/// partner information is current and aggregatable; a port is selected when its partner is that
/// one. Ports with another partner, defaulted, disabled or individual stay unselected (standby).
pub fn select(ports: &mut [&mut LacpPort]) {
    let usable = |p: &LacpPort| {
        p.enabled
            && matches!(p.rx, RxState::Current | RxState::Expired)
            && p.partner.state.has(LacpState::AGGREGATION)
            && p.partner.system != EthernetAddress::ZERO
    };
    let agg = ports
        .iter()
        .find(|p| usable(p))
        .map(|p| (p.partner.system, p.partner.system_priority, p.partner.key));
    for p in ports.iter_mut() {
        let ok =
            usable(p) && Some((p.partner.system, p.partner.system_priority, p.partner.key)) == agg;
        p.selected = ok;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xa]);
    const B: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0xb]);
    const MS: u64 = 1_000_000;

    /// Two systems with two links each; `link_up[i]` says whether link i carries LACPDUs.
    struct Sim {
        a: Vec<LacpPort>,
        b: Vec<LacpPort>,
        now: u64,
        link_up: Vec<bool>,
    }

    impl Sim {
        fn new(rate_a: LacpRate, rate_b: LacpRate) -> Sim {
            let mut s = Sim {
                a: (1..=2).map(|p| LacpPort::new(A, 1, p, rate_a)).collect(),
                b: (1..=2).map(|p| LacpPort::new(B, 7, p, rate_b)).collect(),
                now: S,
                link_up: vec![true, true],
            };
            for p in s.a.iter_mut().chain(s.b.iter_mut()) {
                p.set_enabled(true, S);
            }
            s
        }

        /// Advances by 10 ms steps for `ms` milliseconds, exchanging LACPDUs over the links that
        /// are up.
        fn run(&mut self, ms: u64) {
            for _ in 0..ms / 10 {
                self.now += 10 * MS;
                let now = self.now;
                for side in [&mut self.a, &mut self.b] {
                    let mut refs: Vec<&mut LacpPort> = side.iter_mut().collect();
                    select(&mut refs);
                }
                for i in 0..2 {
                    let (pa, pb) = (&mut self.a[i], &mut self.b[i]);
                    let sa = pa.step(now).then(|| pa.lacpdu());
                    let sb = pb.step(now).then(|| pb.lacpdu());
                    if let Some(pdu) = sa {
                        pa.sent(now, true);
                        if self.link_up[i] {
                            pb.receive(&pdu, now);
                        }
                    }
                    if let Some(pdu) = sb {
                        pb.sent(now, true);
                        if self.link_up[i] {
                            pa.receive(&pdu, now);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn two_systems_aggregate_both_links_after_the_wait_time() {
        let mut s = Sim::new(LacpRate::Fast, LacpRate::Fast);
        s.run(1_000);
        assert!(s.a.iter().all(|p| p.rx == RxState::Current && p.selected));
        assert!(s.a.iter().all(|p| !p.distributing()), "still waiting 2 s");
        s.run(2_500);
        for p in s.a.iter().chain(s.b.iter()) {
            assert_eq!(p.mux, MuxState::CollectingDistributing);
            assert!(p
                .actor
                .state
                .has(LacpState::SYNCHRONIZATION | LacpState::COLLECTING | LacpState::DISTRIBUTING));
            assert!(!p.actor.state.has(LacpState::DEFAULTED));
        }
        assert_eq!(s.a[0].partner.system, B);
        assert_eq!(s.a[0].partner.key, 7);
        assert_eq!(s.b[1].partner.port, 2);
    }

    #[test]
    fn fast_rate_sends_every_second_and_slow_every_thirty() {
        let mut s = Sim::new(LacpRate::Fast, LacpRate::Slow);
        s.run(5_000); // converge
        let (a0, b0) = (s.a[0].counters.tx_lacpdus, s.b[0].counters.tx_lacpdus);
        s.run(60_000);
        // A asks for fast (short timeouts), so B sends to A every second; B asks for slow, so A
        // sends to B every 30 s.
        let b_sent = s.b[0].counters.tx_lacpdus - b0;
        let a_sent = s.a[0].counters.tx_lacpdus - a0;
        assert!((59..=61).contains(&b_sent), "B sent {b_sent} in 60 s");
        assert!((2..=3).contains(&a_sent), "A sent {a_sent} in 60 s");
        assert!(s.a.iter().all(|p| p.distributing()));
        assert!(s.b.iter().all(|p| p.distributing()));
    }

    #[test]
    fn a_silent_partner_stops_distribution_within_one_short_timeout() {
        let mut s = Sim::new(LacpRate::Fast, LacpRate::Fast);
        s.run(5_000);
        assert!(s.a[0].distributing());
        let t0 = s.now;
        s.link_up[0] = false;
        while s.a[0].distributing() {
            s.run(10);
            assert!(
                s.now - t0 <= SHORT_TIMEOUT_NS + 20 * MS,
                "still distributing"
            );
        }
        assert_eq!(s.a[0].rx, RxState::Expired);
        assert_eq!(s.a[0].counters.timeouts, 1);
        assert!(s.a[1].distributing(), "the other link is unaffected");
        // Another timeout later the partner is defaulted.
        s.run(3_100);
        assert_eq!(s.a[0].rx, RxState::Defaulted);
        assert!(s.a[0].actor.state.has(LacpState::DEFAULTED));
        assert!(!s.a[0].selected);
        // The link comes back: aggregated again after the wait time.
        s.link_up[0] = true;
        s.run(4_000);
        assert!(s.a[0].distributing() && s.b[0].distributing());
    }

    #[test]
    fn a_disabled_port_detaches_at_once_and_a_different_partner_is_not_selected() {
        let mut s = Sim::new(LacpRate::Fast, LacpRate::Fast);
        s.run(5_000);
        let now = s.now;
        s.a[1].set_enabled(false, now);
        assert_eq!(s.a[1].rx, RxState::PortDisabled);
        assert!(!s.a[1].distributing());
        assert!(!s.a[1].step(now), "a disabled port sends nothing");
        // A third system answering on link 1 is a different partner: not selected.
        s.a[1].set_enabled(true, now);
        let mut other = LacpPort::new(EthernetAddress([2, 0, 0, 0, 0, 0xc]), 7, 2, LacpRate::Fast);
        other.set_enabled(true, now);
        s.a[1].receive(&other.lacpdu(), now);
        let mut refs: Vec<&mut LacpPort> = s.a.iter_mut().collect();
        select(&mut refs);
        assert!(s.a[0].selected);
        assert!(!s.a[1].selected);
    }

    #[test]
    fn transmissions_are_limited_to_three_per_second() {
        let mut p = LacpPort::new(A, 1, 1, LacpRate::Fast);
        p.set_enabled(true, S);
        let mut sent = 0;
        for i in 0..100 {
            let now = S + i * MS;
            p.ntt = true;
            if p.step(now) {
                p.sent(now, true);
                sent += 1;
            }
        }
        assert_eq!(sent, 3);
    }
}
