//! The LAG case of seed 001 (issue 9 item 6: two 2-port groups, E-Line between them) on the real
//! devices, at a small scale: topology `phy2phy-lag` (the tester's LACP groups in a vecswitch
//! process behind the generator's two memif ports, four member veth pairs to the DUT,
//! crates/testbed/src/lag.rs) with `vecswitch-lag` and `ovs-lag` (crates/testbed/src/dut/lag.rs).
//! For each device:
//! - LACP converged before the first trial: [`Testbed::start`] returned only once every member
//!   was collecting and distributing on both sides, and the LAG report says so;
//! - a trial at a low load both ways (64 flows by UDP source port) comes back complete (counts,
//!   not speed: the host is shared, so ≤ 1 % of loss is tolerated and reported);
//! - over that trial, every member of each group carried a nonzero share of each direction
//!   (at least 10 %, from the kernel's counters of the tester's veth ends): the load really was
//!   shared by the hashes of both sides;
//! - the tester's LAG dropped nothing in that trial, and the placement record lists it;
//! - docs/suites/lag.toml, scaled down (1 s trials, 10 % resolution, searched up to 20 kframes/s),
//!   runs on both of its devices through the bench's path (`run_for_dut_observed`) and forwards;
//! - the suite's `failover` test (a member taken down mid-trial by the lab's procedure) moves
//!   the member's traffic to the other member, files every lost frame, and the member's outage is
//!   within one fast LACP timeout.
//!
//! Root: namespaces and veth pairs are created by the testbed and removed by its guards, also
//! when an assert fails. OVS must be installed (scripts/setup.sh installs openvswitch-switch),
//! and the `vecswitch` binary built (cargo build -p vecswitch-cli).

mod common;

use std::time::Duration;

use common::vecswitch_bin;
use vecswitch_lab::results::Outcome;
use vecswitch_lab::suite::{FrameSize, Suite, TestSpec};
use vecswitch_lab::{LabError, Load, Measurer};
use vecswitch_testbed::dut::evpl::dut_streams;
use vecswitch_testbed::lag::{LagReport, GROUPS, MEMBERS};
use vecswitch_testbed::{
    default_streams, generator_placement, wait_links_up, DutKind, GenMeasurer, Testbed, Topology,
};

const SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/suites/lag.toml");

/// Frames/s of the counted trial, both directions together.
const LOAD_FPS: f64 = 4_000.0;
/// Least share of a group's frames each member must carry, per direction.
const MIN_SHARE: f64 = 0.10;

fn require_tools() {
    common::require_ovs_and_vecswitch();
}

/// A `phy2phy-lag` testbed with `name` started on it (LACP converged) and the generator's ports
/// up.
fn started(name: &str) -> (Testbed, Vec<Box<dyn vecswitch_ports::Port>>) {
    let kind = DutKind::parse(name, vecswitch_bin()).unwrap();
    let mut tb = Testbed::build(Topology::Phy2PhyLag {
        partner_bin: vecswitch_bin(),
    })
    .unwrap();
    let mut ports = tb.open_generator_ports().unwrap();
    tb.start(kind.build())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    wait_links_up(&mut ports, Duration::from_secs(20)).unwrap();
    (tb, ports)
}

fn report(tb: &Testbed, what: &str) -> LagReport {
    tb.lag_report()
        .expect("a phy2phy-lag testbed has a LAG report")
        .unwrap_or_else(|e| panic!("{what}: LAG report: {e}"))
}

#[test]
fn both_lag_devices_converge_forward_and_share_every_member() {
    require_tools();
    for name in ["vecswitch-lag", "ovs-lag"] {
        let (tb, ports) = started(name);
        let converged = report(&tb, name);
        assert!(
            converged.lacp.starts_with("converged"),
            "{name}: {}",
            converged.lacp
        );
        let placement = tb.placement(generator_placement());
        assert!(
            placement.processes.iter().any(|p| p.role == "lag-partner"),
            "{name}: {placement:?}"
        );

        let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(64, true))
            .unwrap()
            .tolerance(0.01);
        // A learning trial first (OVS's bridge learns the generator's two MACs).
        m.trial(Load::fps(1_000.0), Duration::from_secs(1))
            .unwrap_or_else(|e| panic!("{name}: learning trial: {e}"));
        let before = report(&tb, name);
        let r = m
            .trial(Load::fps(LOAD_FPS), Duration::from_secs(2))
            .unwrap_or_else(|e| panic!("{name}: trial: {e}"));
        let after = report(&tb, name);
        tb.check_alive()
            .unwrap_or_else(|e| panic!("{name}: after the trial: {e}"));
        let loads = after.members_since(&before);
        eprintln!(
            "{name}: offered {}, received {}; per member (to DUT, from DUT): {:?}",
            r.offered_frames,
            r.received_frames,
            loads
                .iter()
                .map(|l| (l.tester_end.as_str(), l.frames_to_dut, l.frames_from_dut))
                .collect::<Vec<_>>()
        );
        assert!(
            r.offered_frames > 0 && r.received_frames as f64 >= 0.99 * r.offered_frames as f64,
            "{name}: offered {}, received {}: {r:#?}; LAG {after:#?}",
            r.offered_frames,
            r.received_frames
        );
        for (g, group) in GROUPS.iter().enumerate() {
            let members = &loads[g * MEMBERS..(g + 1) * MEMBERS];
            let to: u64 = members.iter().map(|l| l.frames_to_dut).sum();
            let from: u64 = members.iter().map(|l| l.frames_from_dut).sum();
            for l in members {
                assert!(
                    l.frames_to_dut as f64 >= MIN_SHARE * to as f64
                        && l.frames_from_dut as f64 >= MIN_SHARE * from as f64,
                    "{name}: group {group}'s member {} ↔ {} carried {} of {to} frames to the DUT \
                     and {} of {from} back: the hash did not share the load ({loads:#?})",
                    l.tester_end,
                    l.dut_end,
                    l.frames_to_dut,
                    l.frames_from_dut
                );
            }
        }
        let drops = |r: &LagReport| {
            (
                r.partner_rx_dropped,
                r.partner_tx_dropped,
                r.partner_internal_dropped,
            )
        };
        eprintln!(
            "{name}: partner's show errors before the trial {:?}, after {:?}",
            before.partner_errors, after.partner_errors
        );
        assert_eq!(
            drops(&after),
            drops(&before),
            "{name}: the tester's LAG dropped frames in the trial: {after:#?}"
        );
        assert!(
            after.lacp.starts_with("converged"),
            "{name}: {}",
            after.lacp
        );
        drop(m);
        drop(tb);
    }
}

/// Issue 9 item 5 through the lab's `failover` procedure, as docs/suites/lag.toml runs it (its
/// `lag_failover` test through the bench's path, `run_for_dut_observed`): after a learning trial,
/// one 6 s trial at 4,000 frames/s both ways; 2 s in the tester's end of member 0 (`pm0` ↔ the
/// device's `dut0`, group A) goes down, 4 s in it comes back. For both devices:
/// - the member carried its share of group A before (≥ 10 %), next to nothing while down (the
///   frames between the counters' reading and the link going down), and the other member carried
///   the group's traffic meanwhile (≥ 95 % of it, and frames both ways);
/// - every lost frame is in the trial's accounting (tester, device ingress, device, receive side,
///   unexplained add up to offered − received), and the unexplained ones (the generator's
///   measurer cannot read the tester's LAG) are no more than the tester's LAG says it dropped
///   plus what the kernel says the device's member ends failed to send;
/// - the member's outage (lost / the rate it carried before, IEEE 802.1AX-2014 §6.4.4) is within
///   the bound the suite configures (`outage_bound_ms`, one fast LACP timeout);
/// - afterwards every member is up and LACP converged again.
///
/// Counts and mechanisms only: on a loaded host the trial may be tester-limited (the loss is still
/// counted against what was offered), and the outage is a bound, not a figure.
#[test]
fn a_member_going_down_moves_its_traffic_within_one_lacp_timeout() {
    require_tools();
    let text = std::fs::read_to_string(SUITE).expect("docs/suites/lag.toml");
    let mut suite = Suite::parse(&text).expect("the documented suite parses");
    suite.tests.retain(|t| t.procedure() == "failover");
    assert_eq!(suite.tests.len(), 1, "lag.toml has one failover test");
    let size = FrameSize::Bytes(64);
    let line = suite.line(&size).unwrap();
    let cfg = suite.tests[0].failover_config(&line).unwrap().unwrap();
    let bound_ms = cfg.bound.expect("lag.toml bounds the outage").as_secs_f64() * 1e3;
    for dut in &suite.duts {
        let name = dut.name.as_str();
        let (tb, ports) = started(name);
        let streams = dut_streams(&tb, &size.spec().unwrap(), suite.bidirectional);
        let run = common::run_suite_dut(
            &tb,
            ports,
            streams,
            &suite,
            dut,
            &size,
            None,
            &mut |_, _, _| Err(LabError::Dut("no scale in this test".into())),
        );
        tb.check_alive()
            .unwrap_or_else(|e| panic!("{name}: after the failover: {e}"));
        assert!(run.error.is_none(), "{name}: {:?}", run.error);
        let Outcome::Failover(f) = &run.records[0].outcome else {
            panic!("{name}: {:?}", run.records[0].outcome.name())
        };
        let a = f
            .trial
            .accounting
            .clone()
            .expect("the generator's accounting");
        eprintln!(
            "{name}: {}; offered {}, received {}, lost {} (outage {:.1} ms of the load, {:?} ms \
             of the member's rate); accounting {a:?}; tester's LAG dropped {:?}; LACP after the \
             trial: {}",
            f.describe(),
            f.offered_frames,
            f.received_frames,
            f.lost_frames,
            f.outage_ms,
            f.member_outage_ms,
            f.tester_group_dropped,
            f.state_after
        );
        assert_eq!((f.member.as_str(), f.device_end.as_str()), ("pm0", "dut0"));
        assert!(f.received_frames > 0, "{name}: nothing forwarded: {f:#?}");
        // Traffic moved: pm0 carried its share before, the other member the group's while down.
        assert!(
            f.member_share_before >= MIN_SHARE,
            "{name}: pm0 carried {:.1} % of group A before the event: {f:#?}",
            f.member_share_before * 100.0
        );
        let down = f
            .phases
            .iter()
            .find(|p| p.label == "member down")
            .unwrap_or_else(|| panic!("{name}: no phase with the member down: {f:#?}"));
        let (gone, other) = (&down.members[0], &down.members[1]);
        assert!(
            gone.share <= 0.05 && other.share >= 0.95,
            "{name}: while pm0 was down group A's frames went {:.1} % to pm0 and {:.1} % to pm1: \
             {down:#?}",
            gone.share * 100.0,
            other.share * 100.0
        );
        assert!(
            other.frames.to_device > 0 && other.frames.from_device > 0,
            "{name}: pm1 did not carry both directions while pm0 was down: {down:#?}"
        );
        // Every lost frame is filed somewhere.
        assert_eq!(
            a.refused_by_device
                + a.lost_in_device.unwrap_or(0)
                + a.dropped_at_tester_rx.unwrap_or(0)
                + a.unexplained,
            f.lost_frames,
            "{name}: {a:#?}"
        );
        // The generator's measurer cannot see the tester's LAG's counters, nor the kernel's
        // count of the device's member ends failing to send (OVS does not count those itself),
        // so those losses are "unexplained" in the trial's accounting; the two counts the
        // failover hook reads must cover them: no lost frame that nobody counted.
        let tester_lag = f
            .tester_group_dropped
            .unwrap_or_else(|| panic!("{name}: no count of the tester's LAG's drops: {f:#?}"));
        let member_tx = f
            .device_member_tx_dropped
            .unwrap_or_else(|| panic!("{name}: no count of the member ends' transmit: {f:#?}"));
        // vecswitch must account for every frame it loses. OVS's afxdp ports count no drops;
        // the lab reads the kernel's counters of their veth ends instead (dut::ovs::kernel_drops:
        // failed XDP redirects into OVS's socket, refused transmits), which placed every frame
        // in the runs since; before that a CI run lost 38 where the hooks counted 37. Frames
        // OVS's user space drops are in no counter, so for OVS the test says how many, not
        // asserts.
        let beyond = a.unexplained.saturating_sub(tester_lag + member_tx);
        if name.starts_with("vecswitch") {
            assert_eq!(
                beyond, 0,
                "{name}: {} frames lost that neither the device, the tester's LAG ({tester_lag} \
                 dropped) nor the kernel at the device's member ends ({member_tx}) counted: {a:#?}",
                a.unexplained
            );
        } else {
            eprintln!(
                "{name}: {beyond} of {} lost frames counted by nobody (the tester's LAG dropped \
                 {tester_lag}, the device's member ends failed to send {member_tx})",
                f.lost_frames
            );
        }
        // Within one fast LACP timeout at the member's rate.
        let member_ms = f
            .member_outage_ms
            .unwrap_or_else(|| panic!("{name}: no member outage: {f:#?}"));
        assert!(
            member_ms <= bound_ms && f.within_bound == Some(true),
            "{name}: {} frames lost = {member_ms:.0} ms of pm0's traffic, beyond the suite's \
             {bound_ms:.0} ms: {f:#?}",
            f.lost_frames
        );
        // The group is whole again for the tests after this one.
        let r = report(&tb, name);
        assert!(r.lacp.starts_with("converged"), "{name}: {}", r.lacp);
        drop(tb);
    }
}

/// docs/suites/lag.toml through the bench's path, scaled down: every device of the suite runs
/// its throughput search and forwards frames; over the run every member carried frames both
/// ways and LACP is still converged at the end.
#[test]
fn the_lag_suite_runs_on_both_devices() {
    require_tools();
    let text = std::fs::read_to_string(SUITE).expect("docs/suites/lag.toml");
    let mut suite = Suite::parse(&text).expect("the documented suite parses");
    // The failover test has its own root test above.
    suite.tests.retain(|t| t.procedure() != "failover");
    for t in &mut suite.tests {
        if let TestSpec::Throughput {
            trial_duration_s,
            resolution_percent,
            ..
        } = t
        {
            *trial_duration_s = 1.0;
            *resolution_percent = 10.0;
        }
    }
    let size = FrameSize::Bytes(64);
    assert_eq!(suite.duts.len(), 2, "vecswitch-lag and ovs-lag");
    for dut in &suite.duts {
        let mut topology: Topology = dut.topology.parse().unwrap();
        assert_eq!(topology.to_string(), "phy2phy-lag", "{}", dut.name);
        // (`vecswitch bench` leaves it empty: the partner is the running vecswitch binary.)
        if let Topology::Phy2PhyLag { partner_bin } = &mut topology {
            *partner_bin = vecswitch_bin();
        }
        let kind = DutKind::parse(&dut.name, vecswitch_bin()).unwrap();
        let mut tb = Testbed::build(topology).unwrap();
        let ports = tb.open_generator_ports().unwrap();
        tb.start(kind.build())
            .unwrap_or_else(|e| panic!("{}: {e}", dut.name));
        let streams = dut_streams(&tb, &size.spec().unwrap(), suite.bidirectional);
        let run = common::run_suite_dut(
            &tb,
            ports,
            streams,
            &suite,
            dut,
            &size,
            Some(20_000.0),
            &mut |_, _, _| Err(LabError::Dut("no scale in this suite".into())),
        );
        tb.check_alive().unwrap();
        assert!(run.error.is_none(), "{}: {:?}", dut.name, run.error);
        assert_eq!(run.records.len(), 1, "{}", dut.name);
        match &run.records[0].outcome {
            Outcome::Throughput(t) => {
                let forwarded: u64 = t.trials.iter().map(|tr| tr.received_frames).sum();
                assert!(
                    forwarded > 0,
                    "{}: nothing forwarded: {:#?}",
                    dut.name,
                    t.trials
                );
                eprintln!(
                    "{}: throughput {:?} frames/s (tester-limited: {}) over {} trials",
                    dut.name,
                    t.throughput_fps,
                    t.tester_limited,
                    t.trials.len()
                );
            }
            o => panic!("{}: unexpected outcome {}", dut.name, o.name()),
        }
        let r = report(&tb, &dut.name);
        assert!(r.lacp.starts_with("converged"), "{}: {}", dut.name, r.lacp);
        for m in &r.members {
            assert!(
                m.frames_to_dut > 0 && m.frames_from_dut > 0,
                "{}: member {} carried nothing one way: {r:#?}",
                dut.name,
                m.tester_end
            );
        }
        drop(tb);
    }
}
