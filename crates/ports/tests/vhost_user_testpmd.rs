//! Interop with DPDK's virtio-user frontend (`net_virtio_user`) through Debian's `dpdk-testpmd`,
//! without a VM: our [`VhostUserPort`] is the virtio-net device, testpmd the driver. Both roles,
//! both directions, exact frame counts read from testpmd's own port statistics, frames longer than
//! one receive buffer (MRG_RXBUF), and the frontend killed and restarted.
//!
//! testpmd runs interactively (`-i`) under `stdbuf -oL`, driven through its stdin, with
//! `--no-huge --single-file-segments` (its memory is then one memfd, which virtio-user can pass
//! to us). Each test uses its own socket in a temp dir and its own `--file-prefix`; a [`TestPmd`]
//! guard kills testpmd even when the test fails. Tests run one at a time (testpmd takes 1 GiB and
//! both cores).
//!
//! If `dpdk-testpmd` is missing the tests fail and say so (`make setup` installs `dpdk` and
//! `librte-net-virtio23`).

mod memif_common;

use memif_common::{frame_bytes, make_packet, TempDir};
use std::time::{Duration, Instant};
use vecswitch_buffer::Pool;
use vecswitch_ports::vhost_user::{Role, VhostUserConfig, VhostUserPort};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{serial, TestPmd};

/// testpmd (crates/testsupport) with this file's `--file-prefix` tag and one memfd for all memory.
fn testpmd(vdev: &str, fwd: &str, extra: &[&str]) -> TestPmd {
    TestPmd::virtio_user("vsvhost", vdev, fwd, extra)
}

/// Polls our port until it and testpmd have negotiated both queues.
fn wait_up(port: &mut VhostUserPort, pmd: &mut TestPmd) {
    let t0 = Instant::now();
    while port.link() != LinkState::Up {
        port.poll_control();
        pmd.check_alive();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "vhost-user did not come up with testpmd: {}\n{}",
            port.describe(),
            pmd.output()
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// testpmd's vdev; `server=1` when testpmd listens (our port is then the client).
fn vdev(sock: &str, pmd_listens: bool) -> String {
    format!(
        "net_virtio_user0,path={sock},queues=1,server={}",
        pmd_listens as u8
    )
}

/// Waits until testpmd has created its listening socket.
fn wait_socket(sock: &str, pmd: &mut TestPmd) {
    let t0 = Instant::now();
    while !std::path::Path::new(sock).exists() {
        pmd.check_alive();
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "testpmd did not create {sock}:\n{}",
            pmd.output()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// virtio-user signals DRIVER_OK (our link goes up) before testpmd's port start posts its
/// receive buffers; testpmd answers a command once its ports are started.
fn ports_started(pmd: &mut TestPmd) {
    let _ = pmd.port_stats();
}

/// Starts testpmd and our port in the given role and waits for the link.
fn setup(dir: &TempDir, our_role: Role, fwd: &str, extra: &[&str]) -> (VhostUserPort, TestPmd) {
    let sock = dir.sock("vhost.sock");
    let pmd_listens = our_role == Role::Client;
    let cfg = VhostUserConfig::new("vu0", &sock, our_role);
    if pmd_listens {
        let mut pmd = testpmd(&vdev(&sock, true), fwd, extra);
        wait_socket(&sock, &mut pmd);
        let mut port = VhostUserPort::new(cfg).unwrap();
        wait_up(&mut port, &mut pmd);
        ports_started(&mut pmd);
        (port, pmd)
    } else {
        let mut port = VhostUserPort::new(cfg).unwrap();
        let mut pmd = testpmd(&vdev(&sock, false), fwd, extra);
        wait_up(&mut port, &mut pmd);
        ports_started(&mut pmd);
        (port, pmd)
    }
}

/// Sends `n` numbered frames (sizes cycling through `sizes`) as fast as the driver's receive
/// ring takes them; returns the bytes sent.
fn send_n(port: &mut VhostUserPort, pool: &mut Pool, n: u64, sizes: &[usize]) -> u64 {
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
        if k < burst.len() {
            port.poll_control();
            assert_eq!(port.link(), LinkState::Up, "link went down while sending");
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "sending stalled at {sent}/{n}: {:?}",
                port.errors()
            );
            std::thread::yield_now();
        }
    }
    bytes
}

/// Receives until nothing has arrived for `quiet`; returns the frames received.
fn drain(
    port: &mut VhostUserPort,
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

/// Waits until testpmd's RX-packets reaches `n` (or 20 s pass); returns its stats.
fn wait_rx(pmd: &mut TestPmd, n: u64) -> (u64, u64, u64, u64) {
    let t0 = Instant::now();
    loop {
        let s = pmd.port_stats();
        if s.0 >= n || t0.elapsed() > Duration::from_secs(20) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

// Every testpmd that receives from us runs with --no-flush-rx: `start` otherwise discards what
// already waits in its receive ring, and our first burst may be there (the command is
// asynchronous).

/// Ethernet sizes without FCS: minimum, typical, 1514 (one full MTU frame), and frames that need
/// two to five of testpmd's 2048-byte receive buffers.
const SIZES: [usize; 7] = [60, 64, 512, 1514, 2048, 4000, 9000];

fn txonly_to_us(our_role: Role) {
    let dir = TempDir::new("vu-tx");
    let (mut port, mut pmd) = setup(&dir, our_role, "txonly", &["--txpkts=60"]);
    let mut pool = Pool::new(4096);
    pmd.cmd("start");
    let mut got = 0u64;
    let mut bad_len = 0u64;
    let t0 = Instant::now();
    while got < 200_000 && t0.elapsed() < Duration::from_secs(20) {
        got += drain(&mut port, &mut pool, Duration::from_millis(1), |p, h| {
            bad_len += (p.header(h).total_len != 60) as u64
        });
    }
    pmd.cmd("stop");
    got += drain(&mut port, &mut pool, Duration::from_millis(1000), |p, h| {
        bad_len += (p.header(h).total_len != 60) as u64
    });
    let (rx, _, tx, tx_bytes) = pmd.port_stats();
    assert!(tx > 0, "testpmd sent nothing:\n{}", pmd.output());
    assert_eq!(got, tx, "frames received vs testpmd TX-packets");
    assert_eq!(port.stats().rx_packets, tx);
    assert_eq!(port.stats().rx_bytes, tx_bytes);
    assert_eq!(bad_len, 0, "every frame is 60 bytes");
    assert_eq!((rx, port.stats().rx_dropped), (0, 0));
    assert_eq!(pool.in_use(), 0);
}

fn us_to_rxonly(our_role: Role) {
    let dir = TempDir::new("vu-rx");
    let (mut port, mut pmd) = setup(&dir, our_role, "rxonly", &["--no-flush-rx"]);
    pmd.cmd("start");
    let mut pool = Pool::new(4096);
    const N: u64 = 20_000;
    let bytes = send_n(&mut port, &mut pool, N, &SIZES);
    let stats = wait_rx(&mut pmd, N);
    assert_eq!(stats.0, N, "testpmd RX-packets; ours {:?}", port.errors());
    assert_eq!(stats.1, bytes, "testpmd RX-bytes");
    assert_eq!(port.stats().tx_packets, N);
    assert_eq!(port.stats().tx_bytes, bytes);
    assert_eq!(pool.in_use(), 0);
}

/// We listen (testpmd `server=0`); testpmd generates 60-byte frames; we count exactly its
/// TX-packets.
#[test]
fn server_receives_testpmd_txonly_exact() {
    let _g = serial();
    txonly_to_us(Role::Server);
}

/// We connect (testpmd `server=1`); same exact count.
#[test]
fn client_receives_testpmd_txonly_exact() {
    let _g = serial();
    txonly_to_us(Role::Client);
}

/// We listen; testpmd rxonly counts exactly what we send, 60..9000-byte frames (MRG_RXBUF).
#[test]
fn server_sends_to_testpmd_rxonly_exact() {
    let _g = serial();
    us_to_rxonly(Role::Server);
}

/// We connect; same exact count and bytes.
#[test]
fn client_sends_to_testpmd_rxonly_exact() {
    let _g = serial();
    us_to_rxonly(Role::Client);
}

/// Echo through testpmd `io` forwarding (port 0 back to port 0): 60..9000-byte frames return in
/// order and intact, so both directions carry the bytes, not only the counts.
fn echo(our_role: Role, n: u64) {
    let dir = TempDir::new("vu-io");
    // --no-flush-rx: otherwise testpmd drops what waits in its receive ring when `start` runs.
    let (mut port, mut pmd) = setup(&dir, our_role, "io", &["--no-flush-rx"]);
    pmd.cmd("start");
    let mut pool = Pool::new(8192);
    // At most `window` frames in flight, so that the echo never finds our ring full (io
    // forwarding drops what it cannot send); a 9000-byte frame takes 5 of testpmd's buffers.
    let window = 32;
    let (mut sent, mut next_rx) = (0u64, 0u64);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let t0 = Instant::now();
    while next_rx < n {
        if sent < n && sent - next_rx < window {
            let size = SIZES[(sent % SIZES.len() as u64) as usize];
            let h = make_packet(&mut pool, &frame_bytes(sent, size));
            sent += port.tx_burst(&mut pool, &[h]) as u64;
            pool.free(h);
        }
        out.clear();
        port.rx_burst(&mut pool, &mut out, 256);
        for &h in &out {
            pool.copy_out(h, &mut buf);
            let size = SIZES[(next_rx % SIZES.len() as u64) as usize];
            assert!(
                buf == frame_bytes(next_rx, size),
                "echoed frame {next_rx}: {} bytes, sent {size}",
                buf.len()
            );
            next_rx += 1;
        }
        pool.free_bulk(&out);
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "echo stalled: sent {sent}, back {next_rx}; {:?}\n{}",
            port.errors(),
            pmd.output()
        );
    }
    let (rx, _, tx, _) = pmd.port_stats();
    assert_eq!((rx, tx), (n, n), "testpmd RX/TX-packets");
    assert_eq!(port.stats().tx_packets, n);
    assert_eq!(port.stats().rx_packets, n);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn server_echo_through_testpmd_io_intact() {
    let _g = serial();
    echo(Role::Server, 5_000);
}

#[test]
fn client_echo_through_testpmd_io_intact() {
    let _g = serial();
    echo(Role::Client, 5_000);
}

/// The frontend is killed and started again, twice: each time the link goes down, comes back,
/// and carries an exact count; our pool holds no buffer between bursts.
fn restart(our_role: Role) {
    let dir = TempDir::new("vu-re");
    let sock = dir.sock("vhost.sock");
    let pmd_listens = our_role == Role::Client;
    let mut port: Option<VhostUserPort> = None;
    if !pmd_listens {
        port = Some(VhostUserPort::new(VhostUserConfig::new("vu0", &sock, our_role)).unwrap());
    }
    let mut pool = Pool::new(4096);
    const N: u64 = 3_000;
    for round in 1..=3u64 {
        if pmd_listens {
            // A killed testpmd leaves its socket file behind, and DPDK 22.11 will not bind over it.
            let _ = std::fs::remove_file(&sock);
        }
        let mut pmd = testpmd(&vdev(&sock, pmd_listens), "rxonly", &["--no-flush-rx"]);
        if pmd_listens {
            wait_socket(&sock, &mut pmd);
        }
        let p = port.get_or_insert_with(|| {
            VhostUserPort::new(VhostUserConfig::new("vu0", &sock, our_role)).unwrap()
        });
        wait_up(p, &mut pmd);
        ports_started(&mut pmd);
        pmd.cmd("start");
        let bytes = send_n(p, &mut pool, N, &SIZES);
        let stats = wait_rx(&mut pmd, N);
        assert_eq!((stats.0, stats.1), (N, bytes), "round {round}: testpmd RX");
        assert_eq!(pool.in_use(), 0, "round {round}: buffers held");
        // Kill the frontend (no clean shutdown) and wait for the link to drop.
        pmd.kill();
        drop(pmd);
        let t0 = Instant::now();
        while p.link() == LinkState::Up {
            p.poll_control();
            assert!(t0.elapsed() < Duration::from_secs(20), "link stayed up");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Frames offered while down are counted, not lost silently.
        let h = make_packet(&mut pool, &frame_bytes(0, 60));
        assert_eq!(p.tx_burst(&mut pool, &[h]), 0);
        pool.free(h);
        assert_eq!(p.errors().connects, round);
        assert_eq!(p.errors().disconnects, round);
    }
    let p = port.unwrap();
    assert_eq!(p.stats().tx_packets, 3 * N);
    assert_eq!(p.errors().tx_link_down, 3);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn server_survives_frontend_restarts() {
    let _g = serial();
    restart(Role::Server);
}

#[test]
fn client_reconnects_after_frontend_restarts() {
    let _g = serial();
    restart(Role::Client);
}
