//! Failover of a link aggregation group: one trial at a fixed load with a member link taken down
//! in its middle (and optionally brought back later), and what the loss says about the time the
//! group took to move the member's traffic (issue 9 item 5: "a member going down moves its
//! traffic within one LACP timeout, with the loss counted").
//!
//! RFC 2544 has no such procedure. What this follows:
//! - **RFC 6201 §4 (device reset), frame-loss method**: a fixed load offered across the event; the
//!   time lost is `frames lost / offered rate`. [`FailoverResult::outage_ms`] is exactly that, over
//!   the whole load, as EANTC's failover tests and RFC 6201 report it (a gap of the whole load).
//! - Only the flows on the member that went down lose frames; the rest keep flowing. So the same
//!   loss is also read at the rate that member carried before the event
//!   ([`FailoverResult::member_outage_ms`]: `lost / (share × offered rate)`, the share from the
//!   tester's counters of every member, see below): the gap the member's own flows saw, the figure
//!   IEEE 802.1AX-2014 bounds (the partner stops distributing to a member whose LACPDUs stopped
//!   within Short_Timeout_Time, 3 s at the fast rate, §6.4.4). A suite's `outage_bound_ms`
//!   is compared with it ([`FailoverResult::within_bound`]).
//!
//! The measurer does the event ([`LinkFailover`], reached by [`Measurer::link_failover`]): it
//! offers the load as one trial and, at the given offsets from the start of its send phase, takes
//! the member down (`ip link set … down` on the tester's end of the member link in the lab) or up
//! again; right before each event, and at the start and end, it reads the frames every member
//! carried in each direction. Each frame crosses the member's group once (an E-Line between two
//! groups), so the member's share of its group's frames is its share of the offered load. After
//! the trial the measurer brings every member back and waits until the group is whole again, so
//! the tests after this one find the group as the ones before did.
//!
//! The result keeps the trial (its [`FrameAccounting`](crate::FrameAccounting): every lost frame
//! filed under the tester, the device's ingress, the device, the receive side or unexplained, as
//! the other procedures do), the frames the tester's own side of the group dropped, and per phase
//! (before the event, while the member was down, after it came back) every member's frames and
//! share.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::measurer::{Measurer, TrialResult};
use crate::{LabError, Load};

/// One failover test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailoverConfig {
    pub load: Load,
    /// The trial's length (its send phase).
    pub duration: Duration,
    /// When the member goes down, from the start of the send phase.
    pub down_at: Duration,
    /// When it comes back up (`None`: not during the trial; it is restored after).
    pub up_at: Option<Duration>,
    /// Which member, as an index into the measurer's member list ([`MemberFrames`]).
    pub member: usize,
    /// A learning trial at the same load before the measured one (0: none).
    pub learning: Duration,
    /// The bound the member's outage is compared with (e.g. one LACP timeout), if any.
    pub bound: Option<Duration>,
}

impl FailoverConfig {
    /// The link events of the trial, in time order.
    pub fn events(&self) -> Vec<LinkEvent> {
        let mut v = vec![LinkEvent {
            at: self.down_at,
            member: self.member,
            up: false,
        }];
        if let Some(at) = self.up_at {
            v.push(LinkEvent {
                at,
                member: self.member,
                up: true,
            });
        }
        v
    }

    /// Checks the timeline and the load; errors name the field.
    pub fn validate(&self) -> Result<(), LabError> {
        if !(self.load.fps.is_finite() && self.load.fps > 0.0) {
            return Err(LabError::invalid(
                "failover.load_fps",
                self.load.fps,
                "a positive rate in frames/s",
            ));
        }
        if self.down_at.is_zero() || self.down_at >= self.duration {
            return Err(LabError::invalid(
                "failover.down_at_s",
                self.down_at.as_secs_f64(),
                "after the start and before the end of the trial (0 < down_at_s < trial_duration_s)",
            ));
        }
        if let Some(up) = self.up_at {
            if up <= self.down_at || up >= self.duration {
                return Err(LabError::invalid(
                    "failover.up_at_s",
                    up.as_secs_f64(),
                    "after down_at_s and before the end of the trial",
                ));
            }
        }
        Ok(())
    }
}

/// A link event on a trial's timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkEvent {
    /// From the start of the send phase.
    pub at: Duration,
    /// Index into the measurer's member list.
    pub member: usize,
    /// `true`: the link comes up; `false`: it goes down.
    pub up: bool,
}

/// The frames one member link carried (cumulative counters, or a phase's difference), from the
/// tester's end of the link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFrames {
    /// The group the member belongs to (`A`, `B`).
    pub group: String,
    /// The tester's end of the link (the one the events act on).
    pub member: String,
    /// The device's end.
    pub device_end: String,
    /// Frames the tester sent into the device on this member.
    pub to_device: u64,
    /// Frames the device sent to the tester on this member.
    pub from_device: u64,
}

/// What the measurer's failover hook returns for one trial with link events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventTrial {
    /// The trial, counted as any other (frame accounting included).
    pub trial: TrialResult,
    /// Cumulative member counters: at the start, right before each event, at the end
    /// (events + 2 readings, the same members in the same order in each).
    pub readings: Vec<Vec<MemberFrames>>,
    /// When each event was done, from the start of the trial as the measurer's clock saw it.
    pub applied_at: Vec<Duration>,
    /// Frames the tester's own side of the group dropped during the trial (its counters), when
    /// known: a loss there is the tester's, not the device's.
    pub tester_group_dropped: Option<u64>,
    /// Frames the device's ends of the member links failed to transmit during the trial, as the
    /// tester's side reads them (a veth's peer count), when known: the device's loss when its own
    /// counters miss them.
    #[serde(default)]
    pub device_member_tx_dropped: Option<u64>,
    /// The group's state after the trial, in words (before the measurer restored it).
    pub state_after: String,
}

/// A measurer that can take a member link of the device's link aggregation group down and up in
/// the middle of a trial ([`Measurer::link_failover`]).
pub trait LinkFailover {
    /// The members, in the order events and readings index them (cumulative counters now).
    fn members(&mut self) -> Result<Vec<MemberFrames>, LabError>;

    /// Offers `load` for `duration` as one trial and does `events` at their offsets from the
    /// start of its send phase (module doc). On return every member is up again and the group
    /// whole (or an error says why not).
    fn trial_with_link_events(
        &mut self,
        load: Load,
        duration: Duration,
        events: &[LinkEvent],
    ) -> Result<EventTrial, LabError>;
}

/// One member's frames and its share of its group's in one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemberShare {
    #[serde(flatten)]
    pub frames: MemberFrames,
    /// Share (0..=1) of its group's frames toward the device.
    pub share_to_device: f64,
    /// Share of its group's frames from the device.
    pub share_from_device: f64,
    /// Share of its group's frames, both directions together.
    pub share: f64,
}

/// A stretch of the trial between two readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailoverPhase {
    /// `before`, `member down`, `member back up`.
    pub label: String,
    /// From / to, seconds from the start of the trial (the readings' times).
    pub from_s: f64,
    pub to_s: f64,
    pub members: Vec<MemberShare>,
}

/// What a failover test measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailoverResult {
    pub load_fps: f64,
    /// The member that went down (tester's end) and the device's end of its link.
    pub member: String,
    pub device_end: String,
    pub group: String,
    pub down_at_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_at_s: Option<f64>,
    /// The learning trial, if one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning: Option<TrialResult>,
    /// The measured trial (frame accounting included).
    pub trial: TrialResult,
    pub offered_frames: u64,
    pub received_frames: u64,
    pub lost_frames: u64,
    /// RFC 6201 §4's frame-loss method: lost / offered rate, in ms.
    pub outage_ms: f64,
    /// The member's share of its group's frames before the event (both directions).
    pub member_share_before: f64,
    /// Lost / the rate the member carried before the event, in ms (`None`: it carried nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_outage_ms: Option<f64>,
    /// Frames the tester's side of the group dropped (its own counters), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_group_dropped: Option<u64>,
    /// Frames the device's ends of the members failed to transmit, when known ([`EventTrial`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_member_tx_dropped: Option<u64>,
    pub phases: Vec<FailoverPhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_ms: Option<f64>,
    /// `member_outage_ms <= bound_ms` (`None` without a bound or a member outage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within_bound: Option<bool>,
    /// The group's state after the trial, as the measurer described it.
    pub state_after: String,
    /// The trial was tester-limited: the loss is still counted against what was offered, but
    /// the tester may have caused part of it.
    pub tester_limited: bool,
}

impl FailoverResult {
    /// One line for tables: the member, when, and its shares before and while down.
    pub fn describe(&self) -> String {
        let share = |label: &str| {
            self.phases
                .iter()
                .find(|p| p.label == label)
                .map(|p| {
                    p.members
                        .iter()
                        .filter(|m| m.frames.group == self.group)
                        .map(|m| format!("{} {:.0} %", m.frames.member, m.share * 100.0))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let mut s = format!(
            "{} ({}) down at {:.1} s",
            self.member, self.device_end, self.down_at_s
        );
        if let Some(up) = self.up_at_s {
            s.push_str(&format!(", up at {up:.1} s"));
        }
        s.push_str(&format!(
            "; group {} before: {}; while down: {}",
            self.group,
            share("before"),
            share("member down")
        ));
        if self.up_at_s.is_some() {
            s.push_str(&format!("; back up: {}", share("member back up")));
        }
        if let Some(d) = self.tester_group_dropped {
            s.push_str(&format!("; tester's group dropped {d}"));
        }
        if let Some(d) = self.device_member_tx_dropped {
            s.push_str(&format!("; device's member ends failed to send {d}"));
        }
        match (self.within_bound, self.bound_ms) {
            (Some(true), Some(b)) => s.push_str(&format!("; within {b:.0} ms")),
            (Some(false), Some(b)) => s.push_str(&format!("; BEYOND {b:.0} ms")),
            _ => {}
        }
        s
    }
}

/// The shares of each member in its group over one phase (`after − before` of two readings).
fn phase_shares(before: &[MemberFrames], after: &[MemberFrames]) -> Vec<MemberShare> {
    let delta: Vec<MemberFrames> = after
        .iter()
        .zip(before)
        .map(|(a, b)| MemberFrames {
            to_device: a.to_device.saturating_sub(b.to_device),
            from_device: a.from_device.saturating_sub(b.from_device),
            ..a.clone()
        })
        .collect();
    let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    delta
        .iter()
        .map(|m| {
            let (to, from) = delta
                .iter()
                .filter(|x| x.group == m.group)
                .fold((0, 0), |(t, f), x| (t + x.to_device, f + x.from_device));
            MemberShare {
                share_to_device: ratio(m.to_device, to),
                share_from_device: ratio(m.from_device, from),
                share: ratio(m.to_device + m.from_device, to + from),
                frames: m.clone(),
            }
        })
        .collect()
}

/// Runs the failover test (module doc) on `m`, which must offer a [`LinkFailover`].
pub fn failover<M: Measurer + ?Sized>(
    m: &mut M,
    cfg: &FailoverConfig,
) -> Result<FailoverResult, LabError> {
    cfg.validate()?;
    let no_hook = || {
        LabError::invalid(
            "test.procedure",
            "failover",
            "a measurer that can take a member link of the device's group down mid-trial (the \
             testbed's on topology phy2phy-lag; simulated devices have none)",
        )
    };
    let members = m.link_failover().ok_or_else(no_hook)?.members()?;
    let Some(target) = members.get(cfg.member).cloned() else {
        return Err(LabError::invalid(
            "test.member",
            cfg.member,
            "the index of one of the device's member links (0 .. number of members − 1)",
        ));
    };
    let learning = if cfg.learning.is_zero() {
        None
    } else {
        Some(m.trial(cfg.load, cfg.learning)?)
    };
    let events = cfg.events();
    let et = m
        .link_failover()
        .ok_or_else(no_hook)?
        .trial_with_link_events(cfg.load, cfg.duration, &events)?;
    if et.readings.len() != events.len() + 2
        || et.applied_at.len() != events.len()
        || et.readings.iter().any(|r| r.len() != members.len())
    {
        return Err(LabError::Trial {
            load_fps: cfg.load.fps,
            reason: format!(
                "the measurer returned {} member readings and {} event times for {} events \
                 (expected events + 2 readings of {} members each)",
                et.readings.len(),
                et.applied_at.len(),
                events.len(),
                members.len()
            ),
        });
    }
    let labels = ["before", "member down", "member back up"];
    let mut times = vec![0.0];
    times.extend(et.applied_at.iter().map(Duration::as_secs_f64));
    times.push(cfg.duration.as_secs_f64());
    let phases: Vec<FailoverPhase> = et
        .readings
        .windows(2)
        .enumerate()
        .map(|(i, w)| FailoverPhase {
            label: labels.get(i).copied().unwrap_or("after").to_string(),
            from_s: times[i],
            to_s: times[i + 1],
            members: phase_shares(&w[0], &w[1]),
        })
        .collect();
    let t = et.trial;
    let lost = t.lost_frames();
    let offered_fps = t.offered_fps();
    let outage_ms = if offered_fps > 0.0 {
        lost as f64 / offered_fps * 1e3
    } else {
        0.0
    };
    let member_share_before = phases[0].members[cfg.member].share;
    let member_fps = member_share_before * offered_fps;
    let member_outage_ms = (member_fps > 0.0).then(|| lost as f64 / member_fps * 1e3);
    let bound_ms = cfg.bound.map(|b| b.as_secs_f64() * 1e3);
    let within_bound = bound_ms.zip(member_outage_ms).map(|(b, o)| o <= b);
    Ok(FailoverResult {
        load_fps: cfg.load.fps,
        member: target.member,
        device_end: target.device_end,
        group: target.group,
        down_at_s: cfg.down_at.as_secs_f64(),
        up_at_s: cfg.up_at.map(|d| d.as_secs_f64()),
        learning,
        offered_frames: t.offered_frames,
        received_frames: t.received_frames,
        lost_frames: lost,
        outage_ms,
        member_share_before,
        member_outage_ms,
        tester_group_dropped: et.tester_group_dropped,
        device_member_tx_dropped: et.device_member_tx_dropped,
        phases,
        bound_ms,
        within_bound,
        state_after: et.state_after,
        tester_limited: t.tester_limited,
        trial: t,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BurstResult;

    /// A fake LAG: two groups of two members, the load spread `share0 : 1 − share0` over each
    /// group's members; a member that goes down loses its flows for `detect` (then the other
    /// member takes them), and frames are counted per member as the tester's counters would.
    struct FakeLag {
        share0: f64,
        detect: Duration,
        counters: Vec<MemberFrames>,
        down: Vec<bool>,
        trials: usize,
        event_trials: usize,
    }

    impl FakeLag {
        fn new(share0: f64, detect: Duration) -> FakeLag {
            let counters = (0..4)
                .map(|i| MemberFrames {
                    group: ["A", "B"][i / 2].into(),
                    member: format!("pm{i}"),
                    device_end: format!("dut{i}"),
                    to_device: 0,
                    from_device: 0,
                })
                .collect();
            FakeLag {
                share0,
                detect,
                counters,
                down: vec![false; 4],
                trials: 0,
                event_trials: 0,
            }
        }

        /// Frames for `secs` at `fps` (both directions: half each way), spread over the members
        /// that are up; `lost_member`: frames hashed to it are lost (not yet moved).
        fn carry(&mut self, fps: f64, secs: f64, lost_member: Option<usize>) -> u64 {
            let frames = (fps * secs).round() as u64;
            let half = frames / 2;
            let mut lost = 0;
            for g in 0..2 {
                let (a, b) = (2 * g, 2 * g + 1);
                for (dir, n) in [(0, half), (1, frames - half)] {
                    let on_a = (n as f64 * self.share0).round() as u64;
                    let split = [(a, on_a), (b, n - on_a)];
                    for (m, k) in split {
                        // The tester's counter of the member: what crossed it. Direction 0 enters
                        // the device by group A and leaves by B; direction 1 the other way.
                        let into_device = (dir == 0) == (g == 0);
                        if Some(m) == lost_member {
                            // Lost once (on group A only: group B's counters see the survivors).
                            if g == 0 {
                                lost += k;
                            }
                            continue;
                        }
                        let target = if self.down[m] { m ^ 1 } else { m };
                        let c = &mut self.counters[target];
                        if into_device {
                            c.to_device += k;
                        } else {
                            c.from_device += k;
                        }
                    }
                }
            }
            lost
        }
    }

    impl Measurer for FakeLag {
        fn trial(&mut self, load: Load, d: Duration) -> Result<TrialResult, LabError> {
            self.trials += 1;
            let s = d.as_secs_f64();
            self.carry(load.fps, s, None);
            let n = load.frames_in(s);
            Ok(TrialResult::new(load, d, n, n, d))
        }
        fn burst(&mut self, frames: u64) -> Result<BurstResult, LabError> {
            Ok(BurstResult::new(frames, frames, frames, Duration::ZERO))
        }
        fn link_failover(&mut self) -> Option<&mut dyn LinkFailover> {
            Some(self)
        }
    }

    impl LinkFailover for FakeLag {
        fn members(&mut self) -> Result<Vec<MemberFrames>, LabError> {
            Ok(self.counters.clone())
        }
        fn trial_with_link_events(
            &mut self,
            load: Load,
            d: Duration,
            events: &[LinkEvent],
        ) -> Result<EventTrial, LabError> {
            self.event_trials += 1;
            let mut readings = vec![self.counters.clone()];
            let mut now = Duration::ZERO;
            let mut lost = 0;
            for e in events {
                self.carry(load.fps, (e.at - now).as_secs_f64(), None);
                readings.push(self.counters.clone());
                if !e.up {
                    // The member's flows are lost until the group notices.
                    self.down[e.member] = true;
                    lost += self.carry(load.fps, self.detect.as_secs_f64(), Some(e.member));
                    now = e.at + self.detect;
                } else {
                    self.down[e.member] = false;
                    now = e.at;
                }
            }
            self.carry(load.fps, (d - now).as_secs_f64(), None);
            readings.push(self.counters.clone());
            let n = load.frames_in(d.as_secs_f64());
            let mut trial = TrialResult::new(load, d, n, n - lost, d);
            trial.accounting = Some(crate::FrameAccounting::split(
                n,
                0,
                n,
                0,
                Some(0),
                Some(lost),
                Some(0),
                n - lost,
            ));
            self.down = vec![false; 4];
            Ok(EventTrial {
                trial,
                readings,
                applied_at: events.iter().map(|e| e.at).collect(),
                tester_group_dropped: Some(0),
                device_member_tx_dropped: None,
                state_after: "fake".into(),
            })
        }
    }

    fn cfg(up: Option<u64>) -> FailoverConfig {
        FailoverConfig {
            load: Load::fps(10_000.0),
            duration: Duration::from_secs(6),
            down_at: Duration::from_secs(2),
            up_at: up.map(Duration::from_secs),
            member: 0,
            learning: Duration::from_secs(1),
            bound: Some(Duration::from_secs(3)),
        }
    }

    #[test]
    fn the_outage_is_lost_frames_over_the_rate_and_the_traffic_moves() {
        // 10 kframes/s, member pm0 carries 25 % of group A; its flows are lost for 400 ms:
        // 1,000 frames = 100 ms of the whole load (RFC 6201's figure), 400 ms of the member's.
        let mut lag = FakeLag::new(0.25, Duration::from_millis(400));
        let r = failover(&mut lag, &cfg(None)).unwrap();
        assert_eq!((lag.trials, lag.event_trials), (1, 1));
        assert!(r.learning.is_some());
        assert_eq!(
            (r.offered_frames, r.received_frames, r.lost_frames),
            (60_000, 59_000, 1_000)
        );
        assert!((r.outage_ms - 100.0).abs() < 1e-9, "{}", r.outage_ms);
        assert!((r.member_share_before - 0.25).abs() < 1e-9);
        let m = r.member_outage_ms.unwrap();
        assert!((m - 400.0).abs() < 1e-6, "{m}");
        assert_eq!((r.bound_ms, r.within_bound), (Some(3000.0), Some(true)));
        assert_eq!((r.member.as_str(), r.device_end.as_str()), ("pm0", "dut0"));
        // Phases: before (both members), down (the other member carries the whole group).
        let labels: Vec<&str> = r.phases.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["before", "member down"]);
        let down = &r.phases[1].members;
        assert_eq!(
            (down[0].frames.to_device, down[0].frames.from_device),
            (0, 0)
        );
        assert_eq!(down[1].share, 1.0);
        assert!((r.phases[0].members[1].share - 0.75).abs() < 1e-9);
        // Every lost frame is filed somewhere in the trial's accounting.
        let a = r.trial.accounting.as_ref().unwrap();
        assert_eq!(
            a.refused_by_device
                + a.lost_in_device.unwrap()
                + a.dropped_at_tester_rx.unwrap()
                + a.unexplained,
            r.lost_frames
        );
        assert!(
            r.describe().contains("pm0 (dut0) down at 2.0 s"),
            "{}",
            r.describe()
        );
    }

    #[test]
    fn a_member_back_up_gets_its_share_again_and_a_slow_group_breaks_the_bound() {
        // Down at 2 s, its flows lost until 5.5 s (beyond one fast LACP timeout), up at 6 s.
        let mut c = cfg(Some(6));
        c.duration = Duration::from_secs(8);
        let mut lag = FakeLag::new(0.5, Duration::from_millis(3_500));
        let r = failover(&mut lag, &c).unwrap();
        let labels: Vec<&str> = r.phases.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["before", "member down", "member back up"]);
        assert!((r.phases[2].members[0].share - 0.5).abs() < 1e-9);
        let m = r.member_outage_ms.unwrap();
        assert!((m - 3_500.0).abs() < 1e-6, "{m}");
        assert_eq!(r.within_bound, Some(false));
        assert!(r.describe().contains("BEYOND 3000 ms"), "{}", r.describe());
    }

    #[test]
    fn bad_timelines_and_members_are_refused_naming_the_field() {
        let mut lag = FakeLag::new(0.5, Duration::ZERO);
        let mut c = cfg(None);
        c.down_at = Duration::from_secs(6);
        let e = failover(&mut lag, &c).unwrap_err().to_string();
        assert!(e.contains("down_at_s"), "{e}");
        let mut c = cfg(Some(1));
        c.learning = Duration::ZERO;
        let e = failover(&mut lag, &c).unwrap_err().to_string();
        assert!(e.contains("up_at_s"), "{e}");
        let mut c = cfg(None);
        c.member = 4;
        let e = failover(&mut lag, &c).unwrap_err().to_string();
        assert!(e.contains("test.member = 4"), "{e}");
        assert_eq!(lag.event_trials, 0);
    }

    #[test]
    fn a_measurer_without_the_hook_is_an_error_not_a_plain_trial() {
        let mut sim = crate::sim::SimDut::new(crate::sim::SimModel::Fixed { capacity_fps: 1e6 }, 1);
        let mut c = cfg(None);
        c.learning = Duration::ZERO;
        let e = failover(&mut sim, &c).unwrap_err().to_string();
        assert!(e.contains("phy2phy-lag"), "{e}");
        assert_eq!(sim.trials(), 0);
    }
}
