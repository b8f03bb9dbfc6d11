//! The generator's rate through the lab's phy2phy-veth topology with the Linux bridge as the
//! device, with its veth ends opened as AF_PACKET and as AF_XDP, interleaved:
//!
//! ```text
//! cargo run --release -p vecswitch-testbed --example gen_veth_port -- RUNS SECONDS FRAME_SIZE
//! ```
//!
//! Each trial asks for 2 Mfps per direction (more than either port type reaches, so the trial is
//! tester-limited on purpose) and prints the frames per second offered and received, both
//! directions together. Needs root; builds and removes its own namespaces.

use std::time::Duration;

use vecswitch_lab::{Load, Measurer};
use vecswitch_testbed::dut::linux_bridge::LinuxBridgeDut;
use vecswitch_testbed::{
    default_streams, open_generator_ports_as, GenMeasurer, GenVethPort, Link, Testbed, Topology,
};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: u64| args.get(i).map_or(d, |s| s.parse().expect("a number"));
    let runs = arg(1, 3);
    let secs = arg(2, 3);
    let size = arg(3, 64) as u16;
    println!("run port offered_fps received_fps");
    for run in 1..=runs {
        for kind in [
            GenVethPort::AfPacket,
            GenVethPort::AfXdp,
            GenVethPort::AfXdpNative,
        ] {
            let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Veth }).unwrap();
            let ports = open_generator_ports_as(tb.wiring(), kind).unwrap();
            tb.start(Box::new(LinuxBridgeDut::new())).unwrap();
            let mut m = GenMeasurer::for_testbed(&tb, ports, default_streams(size, true))
                .unwrap()
                .warmup(Duration::from_millis(500))
                .drain(Duration::from_millis(300));
            let r = m
                .trial(Load::fps(2_000_000.0), Duration::from_secs(secs))
                .unwrap();
            let t = r.actual_duration.as_secs_f64().max(1e-9);
            println!(
                "{run} {} {:.0} {:.0}",
                kind.as_str(),
                r.offered_frames as f64 / t,
                r.received_frames as f64 / t
            );
            if let Some(rep) = m.reports().last() {
                for p in &rep.ports {
                    println!(
                        "    {} tx {} rx_ours {} port rx_dropped {} tx_dropped {} lost(trial) {}",
                        p.name,
                        p.tx,
                        p.rx_ours,
                        p.port_stats.rx_dropped,
                        p.port_stats.tx_dropped,
                        rep.lost
                    );
                }
            }
            drop(m);
            tb.stop().unwrap();
        }
    }
}
