//! An idle switch whose ports can all be waited on (memif links in interrupt mode) sleeps in
//! `poll(2)` instead of polling (worker.rs, "Waiting on the ports"): it wakes about 100 times a
//! second instead of about 10,000, frames and control calls wake it before the wait's timeout,
//! and nothing is lost. Counted, not timed: the assertions are about poll and wake counts.

mod common;

use std::time::{Duration, Instant};

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Mode, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_switch::{spawn, LoopStats, Switch, SwitchConfig};

fn memif(name: &str, sock: &str, role: Role, mode: Mode) -> MemifPort {
    let mut cfg = MemifConfig::new(name, sock, 0, role);
    cfg.mode = mode;
    MemifPort::new(cfg).unwrap()
}

/// Sends `frames` from `from` and collects them at `to` (bounded by a deadline, not timed).
fn through(from: &mut MemifPort, to: &mut MemifPort, pool: &mut Pool, frames: &[Vec<u8>]) {
    let hs: Vec<u32> = frames
        .iter()
        .map(|f| {
            let h = pool.alloc().unwrap();
            pool.write_packet(h, f);
            h
        })
        .collect();
    assert_eq!(from.tx_burst(pool, &hs), hs.len());
    pool.free_bulk(&hs);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut out = Vec::new();
    while got.len() < frames.len() && Instant::now() < deadline {
        out.clear();
        to.rx_burst(pool, &mut out, 256);
        for &h in &out {
            let mut v = Vec::new();
            pool.copy_out(h, &mut v);
            got.push(v);
        }
        pool.free_bulk(&out);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got, frames, "every frame forwarded, in order");
}

fn loop_stats(h: &vecswitch_switch::SwitchHandle) -> LoopStats {
    h.call(|sw| sw.show_runtime().loop_stats).unwrap()
}

/// Runs the switch with two memif server ports of `mode` cross-connected, connects two peers of
/// the same mode, idles 1 s and sends a few bursts 50 ms apart; returns the loop's counters over
/// the idle second and over the bursts.
fn idle_then_bursts(mode: Mode) -> (LoopStats, LoopStats) {
    let dir = std::env::temp_dir().join(format!("vs-idle-wait-{}-{mode:?}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Removed when the test ends, passed or failed.
    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    let _cleanup = Dir(dir.clone());
    let (sa, sb) = (
        dir.join("a.sock").display().to_string(),
        dir.join("b.sock").display().to_string(),
    );
    let mut sw = Switch::new(SwitchConfig {
        buffers: 2048,
        mac_table_entries: 1024,
        ..Default::default()
    });
    sw.add_port("a", Box::new(memif("a", &sa, Role::Server, mode)))
        .unwrap();
    sw.add_port("b", Box::new(memif("b", &sb, Role::Server, mode)))
        .unwrap();
    sw.add_xconnect("a", "b").unwrap();
    let h = spawn(sw).unwrap();
    let mut pa = memif("pa", &sa, Role::Client, mode);
    let mut pb = memif("pb", &sb, Role::Client, mode);
    let deadline = Instant::now() + Duration::from_secs(20);
    while (pa.link() != LinkState::Up || pb.link() != LinkState::Up) && Instant::now() < deadline {
        pa.poll_control();
        pb.poll_control();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!((pa.link(), pb.link()), (LinkState::Up, LinkState::Up));
    let up = |h: &vecswitch_switch::SwitchHandle| {
        h.call(|sw| sw.show_ports().iter().all(|p| p.link == LinkState::Up))
            .unwrap()
    };
    while !up(&h) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(up(&h), "the switch's ends came up");

    let mut pool = Pool::new(1024);
    through(&mut pa, &mut pb, &mut pool, &[frame(BCAST, mac(1), 60)]);
    let s0 = loop_stats(&h);
    std::thread::sleep(Duration::from_secs(1));
    let s1 = loop_stats(&h);
    for i in 0..5 {
        std::thread::sleep(Duration::from_millis(50));
        let frames: Vec<Vec<u8>> = (0..32).map(|j| frame(BCAST, mac(i * 32 + j), 60)).collect();
        through(&mut pa, &mut pb, &mut pool, &frames);
    }
    std::thread::sleep(Duration::from_millis(50));
    let s2 = loop_stats(&h);
    let sw = h.stop().unwrap();
    assert_eq!(sw.show_buffers().in_use, 0);
    drop((pa, pb));
    let delta = |a: &LoopStats, b: &LoopStats| LoopStats {
        polls: b.polls - a.polls,
        idle_sleeps: b.idle_sleeps - a.idle_sleeps,
        idle_waits: b.idle_waits - a.idle_waits,
        idle_wakes: b.idle_wakes - a.idle_wakes,
        rx_packets: b.rx_packets - a.rx_packets,
        ..LoopStats::default()
    };
    let (idle, bursts) = (delta(&s0, &s1), delta(&s1, &s2));
    eprintln!(
        "{mode:?}: idle 1 s: {} polls, {} sleeps, {} waits ({} woken); 5 bursts: {} polls, {} waits ({} woken)",
        idle.polls, idle.idle_sleeps, idle.idle_waits, idle.idle_wakes,
        bursts.polls, bursts.idle_waits, bursts.idle_wakes
    );
    (idle, bursts)
}

#[test]
fn an_idle_switch_on_interrupt_mode_memif_waits_instead_of_polling() {
    let (idle, bursts) = idle_then_bursts(Mode::Interrupt);
    // 1 s idle at one wait of at most 10 ms each: about 100 polls (a few more for the control
    // calls and the wake-ups around them); the back-off alone polls about 10,000 times.
    assert!(idle.idle_waits > 0, "{idle:?}");
    assert!(
        idle.polls < 1_000,
        "an idle second polled {} times: {idle:?}",
        idle.polls
    );
    // Each of the 5 bursts arrived while the worker waited (50 ms idle before each) and woke it
    // (the peer wrote the ring's eventfd), as the control call that read the counters did.
    assert_eq!(bursts.rx_packets, 5 * 32, "{bursts:?}");
    assert!(
        bursts.idle_wakes >= 4,
        "the frames woke the waiting worker: {bursts:?}"
    );
}

#[test]
fn a_polling_mode_port_keeps_the_worker_polling() {
    let (idle, bursts) = idle_then_bursts(Mode::Polling);
    assert_eq!(idle.idle_waits, 0, "{idle:?}");
    assert!(idle.idle_sleeps > 1_000, "the back-off: {idle:?}");
    assert_eq!(bursts.rx_packets, 5 * 32, "{bursts:?}");
}
