//! Interop with DPDK's `net_memif` through Debian's `dpdk-testpmd`, in both roles and both
//! directions, with exact frame counts read from testpmd's own port statistics.
//!
//! testpmd runs interactively (`-i`), driven through its stdin (`start`, `show port stats all`,
//! `stop`, `quit`) under `stdbuf -oL` so that its answers arrive line by line. Each test uses its
//! own socket in a temp dir and its own `--file-prefix`, and a [`TestPmd`] guard kills testpmd even
//! when the test fails. memif counters reset when the peer disconnects, so statistics are read
//! while connected. Tests run one at a time (testpmd takes 1 GiB and both cores).
//!
//! If `dpdk-testpmd` is missing, the tests fail and say so (`make setup` installs the `dpdk`
//! package).

mod memif_common;

use memif_common::*;
use std::time::{Duration, Instant};
use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{serial, TestPmd};

/// testpmd (crates/testsupport) with this file's `--file-prefix` tag.
fn testpmd(vdev: &str, fwd: &str, extra: &[&str]) -> TestPmd {
    TestPmd::memif("vsmemif", vdev, fwd, extra)
}

/// Polls our port until testpmd has connected to it (or we to testpmd).
fn wait_up(port: &mut MemifPort, pmd: &mut TestPmd) {
    let t0 = Instant::now();
    while port.link() != LinkState::Up {
        port.poll_control();
        pmd.check_alive();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "memif did not connect to testpmd: {}\n{}",
            port.describe(),
            pmd.output()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn vdev(role: &str, sock: &str) -> String {
    format!("net_memif0,role={role},socket={sock},socket-abstract=no,id=0")
}

/// Sends `n` numbered frames (sizes from `sizes`) as fast as the ring takes them; returns bytes.
fn send_n(port: &mut MemifPort, pool: &mut Pool, n: u64, sizes: &[usize]) -> u64 {
    let (mut sent, mut bytes) = (0u64, 0u64);
    let t0 = Instant::now();
    while sent < n {
        let mut burst = Vec::new();
        for i in 0..(n - sent).min(32) {
            let seq = sent + i;
            burst.push(make_packet(
                pool,
                &frame_bytes(seq, sizes[(seq % sizes.len() as u64) as usize]),
            ));
        }
        let k = port.tx_burst(pool, &burst);
        for &h in &burst[..k] {
            bytes += pool.header(h).total_len as u64;
        }
        pool.free_bulk(&burst);
        sent += k as u64;
        if k == 0 {
            port.poll_control();
            assert_eq!(port.link(), LinkState::Up, "link went down while sending");
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "sending stalled at {sent}/{n}"
            );
            std::thread::yield_now();
        }
    }
    bytes
}

/// Receives until nothing has arrived for `quiet`; returns the frames received.
fn drain(
    port: &mut MemifPort,
    pool: &mut Pool,
    quiet: Duration,
    mut each: impl FnMut(&Pool, u32),
) -> u64 {
    let mut n = 0;
    let mut last = Instant::now();
    let mut out = Vec::new();
    while last.elapsed() < quiet {
        out.clear();
        let k = port.rx_burst(pool, &mut out, 256);
        for &h in &out {
            each(pool, h);
        }
        pool.free_bulk(&out);
        if k > 0 {
            n += k as u64;
            last = Instant::now();
        } else {
            std::thread::yield_now();
        }
    }
    n
}

const SIZES: [usize; 8] = [60, 64, 128, 512, 1024, 1500, 1514, 60];
const JUMBO: [usize; 6] = [60, 2048, 2049, 4000, 9000, 1514];

/// We are the server; testpmd (client) counts what we send (rxonly).
#[test]
fn server_to_testpmd_client_rxonly_exact() {
    let _g = serial();
    let dir = TempDir::new("pmd-rx");
    let sock = dir.sock("pmd.sock");
    let mut srv = MemifPort::new(MemifConfig::new("vs0", &sock, 0, Role::Server)).unwrap();
    let mut pmd = testpmd(&vdev("client", &sock), "rxonly", &[]);
    wait_up(&mut srv, &mut pmd);
    pmd.cmd("start");
    let mut pool = Pool::new(4096);
    const N: u64 = 20_000;
    let bytes = send_n(&mut srv, &mut pool, N, &JUMBO);
    let t0 = Instant::now();
    let stats = loop {
        let s = pmd.port_stats();
        if s.0 >= N || t0.elapsed() > Duration::from_secs(20) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(stats.0, N, "testpmd RX-packets");
    assert_eq!(stats.1, bytes, "testpmd RX-bytes");
    assert_eq!(srv.stats().tx_packets, N);
    assert_eq!(srv.stats().tx_bytes, bytes);
    assert_eq!(pool.in_use(), 0);
}

/// We are the server; testpmd (client) generates 60-byte frames (txonly); we receive exactly what
/// its TX-packets says.
#[test]
fn testpmd_client_txonly_to_server_exact() {
    let _g = serial();
    let dir = TempDir::new("pmd-tx");
    let sock = dir.sock("pmd.sock");
    let mut srv = MemifPort::new(MemifConfig::new("vs0", &sock, 0, Role::Server)).unwrap();
    let mut pmd = testpmd(&vdev("client", &sock), "txonly", &["--txpkts=60"]);
    wait_up(&mut srv, &mut pmd);
    let mut pool = Pool::new(4096);
    pmd.cmd("start");
    let mut got = 0u64;
    let mut bad_len = 0u64;
    let t0 = Instant::now();
    while got < 200_000 && t0.elapsed() < Duration::from_secs(20) {
        got += drain(&mut srv, &mut pool, Duration::from_millis(1), |p, h| {
            bad_len += (p.header(h).total_len != 60) as u64
        });
    }
    pmd.cmd("stop");
    got += drain(&mut srv, &mut pool, Duration::from_millis(1000), |p, h| {
        bad_len += (p.header(h).total_len != 60) as u64
    });
    let (rx, _, tx, tx_bytes) = pmd.port_stats();
    assert!(tx > 0, "testpmd sent nothing:\n{}", pmd.output());
    assert_eq!(got, tx, "frames received vs testpmd TX-packets");
    assert_eq!(srv.stats().rx_packets, tx);
    assert_eq!(srv.stats().rx_bytes, tx_bytes);
    assert_eq!(bad_len, 0, "every frame is 60 bytes");
    assert_eq!((rx, srv.stats().rx_dropped), (0, 0));
    assert_eq!(pool.in_use(), 0);
}

/// Echo through testpmd `io` forwarding (it sends back on port 0 what it receives there): frames
/// of 60..=9000 bytes go out and come back in order and intact.
fn echo(role_of_us: Role, n: u64, ring_size_log2: u8) {
    let dir = TempDir::new("pmd-io");
    let sock = dir.sock("pmd.sock");
    let pmd_role = match role_of_us {
        Role::Server => "client",
        Role::Client => "server",
    };
    // --no-flush-rx: testpmd otherwise drops what is waiting in its receive queue when `start` runs,
    // and our first frames may be there already.
    let mut pmd = testpmd(&vdev(pmd_role, &sock), "io", &["--no-flush-rx"]);
    if role_of_us == Role::Client {
        // testpmd must be listening first; our client retries until it is.
        let t0 = Instant::now();
        while !std::path::Path::new(&sock).exists() {
            pmd.check_alive();
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "testpmd did not create {sock}:\n{}",
                pmd.output()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut cfg = MemifConfig::new("vs0", &sock, 0, role_of_us);
    cfg.ring_size_log2 = ring_size_log2;
    let mut port = MemifPort::new(cfg).unwrap();
    wait_up(&mut port, &mut pmd);
    // As server we advertise our ring size as the maximum (testpmd's default is 2^10); as client we
    // choose it.
    let want = match role_of_us {
        Role::Server => ring_size_log2.min(10),
        Role::Client => ring_size_log2,
    };
    assert_eq!(port.ring_size_log2(), want, "negotiated ring size");
    pmd.cmd("start");
    let mut pool = Pool::new(8192);
    // Keep at most `window` frames in flight so that testpmd's echo never finds our receive ring
    // full (io forwarding drops what it cannot send): a frame takes up to 5 descriptors (9000 B).
    let window = 256.min((1u64 << port.ring_size_log2()) / 5);
    let mut next_rx = 0u64;
    let mut sent = 0u64;
    let mut buf = Vec::new();
    let t0 = Instant::now();
    while next_rx < n {
        if sent < n && sent - next_rx < window {
            let seq = sent;
            let h = make_packet(
                &mut pool,
                &frame_bytes(seq, JUMBO[(seq % JUMBO.len() as u64) as usize]),
            );
            sent += port.tx_burst(&mut pool, &[h]) as u64;
            pool.free(h);
        }
        let mut out = Vec::new();
        port.rx_burst(&mut pool, &mut out, 256);
        for &h in &out {
            pool.copy_out(h, &mut buf);
            let want = frame_bytes(next_rx, JUMBO[(next_rx % JUMBO.len() as u64) as usize]);
            if buf.len() != want.len() {
                let st = pmd.port_stats();
                panic!(
                    "echoed frame {next_rx}: {} bytes, sent {} bytes (we sent {sent} frames, testpmd rx/tx {st:?}; {:?})",
                    buf.len(),
                    want.len(),
                    port.errors()
                );
            }
            assert!(buf == want, "echoed frame {next_rx} content");
            next_rx += 1;
        }
        pool.free_bulk(&out);
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "echo stalled: sent {sent}, back {next_rx}; {}\n{}",
            port.describe(),
            pmd.output()
        );
    }
    let (rx, _, tx, _) = pmd.port_stats();
    assert_eq!((rx, tx), (n, n), "testpmd RX/TX-packets");
    assert_eq!(port.stats().tx_packets, n);
    assert_eq!(port.stats().rx_packets, n);
    assert_eq!(port.stats().rx_bytes, port.stats().tx_bytes);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn server_echo_through_testpmd_client_io() {
    let _g = serial();
    echo(Role::Server, 10_000, 10);
}

#[test]
fn server_ring_256_echo_through_testpmd_client() {
    let _g = serial();
    echo(Role::Server, 5_000, 8);
}

#[test]
fn client_ring_16384_echo_through_testpmd_server() {
    let _g = serial();
    echo(Role::Client, 40_000, 14);
}

#[test]
fn client_echo_through_testpmd_server_io() {
    let _g = serial();
    echo(Role::Client, 10_000, 10);
}

/// We are the client; testpmd (server) generates 60-byte frames (txonly); we receive exactly what
/// its TX-packets says. (The other direction: `client_to_testpmd_server_rxonly_exact`.)
#[test]
fn testpmd_server_txonly_to_client_exact() {
    let _g = serial();
    let dir = TempDir::new("pmd-ctx");
    let sock = dir.sock("pmd.sock");
    let mut pmd = testpmd(&vdev("server", &sock), "txonly", &["--txpkts=60"]);
    let mut cli = MemifPort::new(MemifConfig::new("vs0", &sock, 0, Role::Client)).unwrap();
    wait_up(&mut cli, &mut pmd);
    let mut pool = Pool::new(4096);
    pmd.cmd("start");
    let mut got = 0u64;
    let t0 = Instant::now();
    while got < 200_000 && t0.elapsed() < Duration::from_secs(20) {
        got += drain(&mut cli, &mut pool, Duration::from_millis(1), |_, _| {});
    }
    pmd.cmd("stop");
    got += drain(&mut cli, &mut pool, Duration::from_millis(1000), |_, _| {});
    let (_, _, tx, tx_bytes) = pmd.port_stats();
    assert!(tx > 0, "testpmd sent nothing:\n{}", pmd.output());
    assert_eq!(got, tx, "frames received vs testpmd TX-packets");
    assert_eq!(cli.stats().rx_bytes, tx_bytes);
    assert_eq!(tx_bytes, 60 * tx);
    assert_eq!(pool.in_use(), 0);
}

/// We are the client; testpmd (server) counts what we send.
#[test]
fn client_to_testpmd_server_rxonly_exact() {
    let _g = serial();
    let dir = TempDir::new("pmd-crx");
    let sock = dir.sock("pmd.sock");
    let mut pmd = testpmd(&vdev("server", &sock), "rxonly", &[]);
    let mut cli = MemifPort::new(MemifConfig::new("vs0", &sock, 0, Role::Client)).unwrap();
    wait_up(&mut cli, &mut pmd);
    pmd.cmd("start");
    let mut pool = Pool::new(4096);
    const N: u64 = 20_000;
    let bytes = send_n(&mut cli, &mut pool, N, &SIZES);
    let t0 = Instant::now();
    let stats = loop {
        let s = pmd.port_stats();
        if s.0 >= N || t0.elapsed() > Duration::from_secs(20) {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        (stats.0, stats.1),
        (N, bytes),
        "testpmd RX-packets / RX-bytes"
    );
    assert_eq!(pool.in_use(), 0);
}

/// testpmd goes away and a new one comes: our server goes down, then up again, and traffic flows.
#[test]
fn server_survives_testpmd_restart() {
    let _g = serial();
    let dir = TempDir::new("pmd-re");
    let sock = dir.sock("pmd.sock");
    let mut srv = MemifPort::new(MemifConfig::new("vs0", &sock, 0, Role::Server)).unwrap();
    let mut pool = Pool::new(1024);
    for round in 1..=2u64 {
        let mut pmd = testpmd(&vdev("client", &sock), "rxonly", &[]);
        wait_up(&mut srv, &mut pmd);
        assert_eq!(srv.connects(), round);
        pmd.cmd("start");
        send_n(&mut srv, &mut pool, 1000, &SIZES);
        let t0 = Instant::now();
        while pmd.port_stats().0 < 1000 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(pmd.port_stats().0, 1000, "round {round}");
        drop(pmd);
        let t0 = Instant::now();
        while srv.link() == LinkState::Up {
            srv.poll_control();
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "server did not notice testpmd leaving"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(srv.last_disconnect().is_some());
    }
    assert_eq!(pool.in_use(), 0);
}

/// Our server in interrupt mode: testpmd (client, txonly) sees our ring unmasked and kicks the
/// eventfd, so a worker sleeping in poll(2) on `rx_event_fd` wakes up and finds frames.
#[test]
fn interrupt_mode_wakes_on_testpmd_traffic() {
    let _g = serial();
    let dir = TempDir::new("pmd-irq");
    let sock = dir.sock("pmd.sock");
    let mut cfg = MemifConfig::new("vs0", &sock, 0, Role::Server);
    cfg.mode = vecswitch_ports::memif::Mode::Interrupt;
    let mut srv = MemifPort::new(cfg).unwrap();
    let mut pmd = testpmd(&vdev("client", &sock), "txonly", &["--txpkts=60"]);
    wait_up(&mut srv, &mut pmd);
    let fd = srv.rx_event_fd().expect("eventfd while connected");
    let mut pool = Pool::new(4096);
    // Nothing sent yet: whatever testpmd's port start may have signalled is drained by rx_burst.
    srv.rx_burst(&mut pool, &mut Vec::new(), 256);
    pmd.cmd("start");
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; waits at most 20 s (a hang guard).
    let r = unsafe { libc::poll(&mut p, 1, 20_000) };
    assert_eq!(r, 1, "eventfd not kicked:\n{}", pmd.output());
    let mut out = Vec::new();
    let mut n = 0;
    let t0 = Instant::now();
    while n == 0 && t0.elapsed() < Duration::from_secs(5) {
        n += srv.rx_burst(&mut pool, &mut out, 256);
    }
    assert!(n > 0, "woken but no frames");
    pool.free_bulk(&out);
    pmd.cmd("stop");
    drain(&mut srv, &mut pool, Duration::from_millis(500), |_, _| {});
    assert_eq!(pool.in_use(), 0);
}

/// Abstract sockets, DPDK's default: our `@name` is testpmd's `socket=name` (no `socket-abstract`
/// argument), in both roles.
#[test]
fn abstract_socket_interop_both_roles() {
    let _g = serial();
    for our_role in [Role::Server, Role::Client] {
        let name = format!("vecswitch-pmd-{}-{our_role:?}", std::process::id());
        let (pmd_role, fwd) = match our_role {
            Role::Server => ("client", "rxonly"),
            Role::Client => ("server", "rxonly"),
        };
        let mut pmd = testpmd(
            &format!("net_memif0,role={pmd_role},socket={name},id=0"),
            fwd,
            &[],
        );
        let mut port =
            MemifPort::new(MemifConfig::new("vs0", &format!("@{name}"), 0, our_role)).unwrap();
        wait_up(&mut port, &mut pmd);
        pmd.cmd("start");
        let mut pool = Pool::new(1024);
        let bytes = send_n(&mut port, &mut pool, 5000, &SIZES);
        let t0 = Instant::now();
        let mut s = pmd.port_stats();
        while s.0 < 5000 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(100));
            s = pmd.port_stats();
        }
        assert_eq!(
            (s.0, s.1),
            (5000, bytes),
            "{our_role:?}: testpmd RX-packets / RX-bytes"
        );
        assert_eq!(pool.in_use(), 0);
    }
}
