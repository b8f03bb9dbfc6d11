//! Measures what an AF_PACKET port adds to one-way latency, over a veth pair whose far end sits
//! in a network namespace this program creates (and deletes on exit, panics included). Needs root.
//!
//! ```text
//! cargo run --release -p vecswitch-ports --example afp_latency -- latency RX_MODE RATE_PPS COUNT [LEN]
//! cargo run --release -p vecswitch-ports --example afp_latency -- throughput RX_MODE SECONDS [LEN [FRAME_SIZE]]
//! ```
//!
//! `latency`: one thread sends COUNT frames of LEN bytes (default 60) at RATE_PPS from the host
//! end and busy-polls the far end; each frame carries its send time (CLOCK_MONOTONIC through
//! `Instant`), taken just before `tx_burst`, and the latency is the time `rx_burst` returned it.
//! Prints min / median / p99 / max in µs. Both ports use RX_MODE (`block` or `frame`), as the
//! generator would.
//!
//! `throughput`: a sender thread sends LEN-byte frames as fast as the TX ring takes them for
//! SECONDS, a receiver thread drains the far end; prints frames per second sent and received,
//! the kernel's drops and the receiver's time in `rx_burst` per frame. FRAME_SIZE (default 2048)
//! is the ring slot size (16384 for jumbo frames).

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort, RxMode};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::{LinkState, Port};

const ETHERTYPE: u16 = 0x88b5;

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

struct Lab {
    ns: String,
    host: String,
    peer: String,
}

impl Lab {
    fn new() -> Lab {
        let id = std::process::id() % 100_000;
        let lab = Lab {
            ns: format!("vslat{id}"),
            host: format!("vslh{id}"),
            peer: format!("vslp{id}"),
        };
        ip(&["netns", "add", &lab.ns]);
        ip(&[
            "link", "add", &lab.host, "type", "veth", "peer", "name", &lab.peer,
        ]);
        ip(&["link", "set", &lab.peer, "netns", &lab.ns]);
        ip(&["link", "set", &lab.host, "up"]);
        ip(&["-n", &lab.ns, "link", "set", &lab.peer, "up"]);
        lab
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.host])
            .output();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

fn ports(lab: &Lab, mode: RxMode, frame_size: u32) -> (AfPacketPort, AfPacketPort) {
    let hc = AfPacketConfig {
        rx_mode: mode,
        frame_size,
        ..AfPacketConfig::new("host", &lab.host)
    };
    let pc = AfPacketConfig {
        rx_mode: mode,
        frame_size,
        ..AfPacketConfig::new("peer", &lab.peer)
    };
    let host = AfPacketPort::open(hc).expect("open host end");
    let peer =
        AfPacketPort::open_in_netns(pc, &format!("/run/netns/{}", lab.ns)).expect("open far end");
    let deadline = Instant::now() + Duration::from_secs(5);
    while host.link() != LinkState::Up || peer.link() != LinkState::Up {
        assert!(Instant::now() < deadline, "links never came up");
        std::thread::sleep(Duration::from_millis(10));
    }
    (host, peer)
}

fn frame(len: usize, sent_ns: u64) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x11]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x21]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..22].copy_from_slice(&sent_ns.to_be_bytes());
    f
}

fn sent_ns(bytes: &[u8]) -> Option<u64> {
    (bytes.len() >= 22 && bytes[12..14] == ETHERTYPE.to_be_bytes())
        .then(|| u64::from_be_bytes(bytes[14..22].try_into().expect("8 bytes")))
}

fn latency(mode: RxMode, rate: f64, count: usize, len: usize) {
    let lab = Lab::new();
    let (mut host, mut peer) = ports(&lab, mode, 2048);
    let mut pool = Pool::new(4096);
    let t0 = Instant::now();
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut next = t0 + Duration::from_millis(100);
    let mut sent = 0usize;
    let mut lat_ns: Vec<u64> = Vec::with_capacity(count);
    let mut got = Vec::new();
    let mut bytes = Vec::new();
    let deadline_after_last = Duration::from_millis(500);
    let mut last_send = Instant::now();
    while lat_ns.len() < count {
        let now = Instant::now();
        if sent < count && now >= next {
            let ts = Instant::now().duration_since(t0).as_nanos() as u64;
            let h = packet_from_bytes(&mut pool, &frame(len, ts)).expect("pool");
            if host.tx_burst(&mut pool, &[h]) == 1 {
                sent += 1;
                next += period;
                last_send = now;
            }
            pool.free(h);
        }
        got.clear();
        if peer.rx_burst(&mut pool, &mut got, 64) > 0 {
            let at = Instant::now().duration_since(t0).as_nanos() as u64;
            for &h in &got {
                pool.copy_out(h, &mut bytes);
                if let Some(ts) = sent_ns(&bytes) {
                    lat_ns.push(at - ts);
                }
            }
            pool.free_bulk(&got);
        }
        if sent == count && now.duration_since(last_send) > deadline_after_last {
            break;
        }
    }
    lat_ns.sort_unstable();
    let q = |p: f64| lat_ns[((lat_ns.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0;
    println!(
        "latency rx_mode={mode:?} rate={rate} pps len={len}: sent {sent} received {} \
         min {:.1} µs median {:.1} µs p99 {:.1} µs max {:.1} µs",
        lat_ns.len(),
        q(0.0),
        q(0.5),
        q(0.99),
        q(1.0)
    );
}

fn throughput(mode: RxMode, secs: f64, len: usize, frame_size: u32) {
    let lab = Lab::new();
    let (mut host, mut peer) = ports(&lab, mode, frame_size);
    let stop = Arc::new(AtomicBool::new(false));
    let stop_rx = stop.clone();
    let rx = std::thread::spawn(move || {
        let mut pool = Pool::new(4096);
        let mut got = Vec::new();
        let mut n = 0u64;
        // Time spent in bursts that returned frames: the receiver's cost per frame.
        let mut busy = Duration::ZERO;
        // Keep draining a little after the sender stops.
        let mut idle_since: Option<Instant> = None;
        loop {
            got.clear();
            let t = Instant::now();
            let k = peer.rx_burst(&mut pool, &mut got, 256);
            if k > 0 {
                busy += t.elapsed();
            }
            n += got
                .iter()
                .filter(|&&h| pool.data(h).get(12..14) == Some(&ETHERTYPE.to_be_bytes()[..]))
                .count() as u64;
            pool.free_bulk(&got);
            if stop_rx.load(Ordering::Relaxed) {
                if k == 0 {
                    let t = *idle_since.get_or_insert_with(Instant::now);
                    if t.elapsed() > Duration::from_millis(200) {
                        break;
                    }
                } else {
                    idle_since = None;
                }
            }
        }
        (n, peer.af_packet_stats().kernel_drops, busy)
    });
    let mut pool = Pool::new(4096);
    let pkts: Vec<u32> = (0..32)
        .map(|_| packet_from_bytes(&mut pool, &frame(len, 0)).expect("pool"))
        .collect();
    let t0 = Instant::now();
    let mut sent = 0u64;
    while t0.elapsed().as_secs_f64() < secs {
        sent += host.tx_burst(&mut pool, &pkts) as u64;
    }
    let el = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let (received, drops, busy) = rx.join().expect("receiver");
    println!(
        "throughput rx_mode={mode:?} len={len} frame_size={frame_size}: sent {:.0} fps, \
         received {:.0} fps ({received}/{sent} frames, kernel drops {drops}), \
         rx_burst {:.0} ns/frame",
        sent as f64 / el,
        received as f64 / el,
        busy.as_nanos() as f64 / received.max(1) as f64,
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: afp_latency latency block|frame RATE_PPS COUNT [LEN] | \
                 throughput block|frame SECONDS [LEN [FRAME_SIZE]]";
    let mode = match args.get(1).map(String::as_str) {
        Some("block") => RxMode::Block,
        Some("frame") => RxMode::Frame,
        _ => panic!("{usage}"),
    };
    let num = |i: usize, d: f64| -> f64 {
        args.get(i)
            .map(|s| s.parse().unwrap_or_else(|_| panic!("{usage}")))
            .unwrap_or(d)
    };
    match args.first().map(String::as_str) {
        Some("latency") => latency(
            mode,
            num(2, 1000.0),
            num(3, 5000.0) as usize,
            num(4, 60.0) as usize,
        ),
        Some("throughput") => throughput(
            mode,
            num(2, 3.0),
            num(3, 60.0) as usize,
            num(4, 2048.0) as u32,
        ),
        _ => panic!("{usage}"),
    }
}
