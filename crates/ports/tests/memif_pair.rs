//! Our memif client against our memif server in one process: handshake, exact frame counts both
//! ways with sizes 60..=9000 (chained descriptors), ring sizes 2^8 and 2^14, shared sockets serving
//! two ids, interrupt and polling mode, secrets, and config validation.

mod memif_common;

use memif_common::*;
use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifError, MemifPort, MemifState, Mode, Role};
use vecswitch_ports::{LinkState, Port};

fn pair(dir: &TempDir, log2: u8) -> (MemifPort, MemifPort) {
    let sock = dir.sock("memif.sock");
    let mut s = MemifConfig::new("srv", &sock, 0, Role::Server);
    s.ring_size_log2 = log2;
    let mut c = MemifConfig::new("cli", &sock, 0, Role::Client);
    c.ring_size_log2 = log2;
    (MemifPort::new(s).unwrap(), MemifPort::new(c).unwrap())
}

fn both_ways(log2: u8, n: u64) {
    let dir = TempDir::new("pair");
    let (mut srv, mut cli) = pair(&dir, log2);
    assert_eq!(srv.link(), LinkState::Down);
    connect_all(&mut [&mut srv, &mut cli]);
    assert_eq!(srv.ring_size_log2(), log2);
    assert_eq!(cli.ring_size_log2(), log2);
    let mut pool = Pool::new(4096);

    let b1 = transfer(&mut cli, &mut srv, &mut pool, n);
    let b2 = transfer(&mut srv, &mut cli, &mut pool, n);
    assert_eq!(cli.stats().tx_packets, n);
    assert_eq!(srv.stats().rx_packets, n);
    assert_eq!(srv.stats().tx_packets, n);
    assert_eq!(cli.stats().rx_packets, n);
    assert_eq!(srv.stats().rx_bytes, b1);
    assert_eq!(cli.stats().tx_bytes, b1);
    assert_eq!(cli.stats().rx_bytes, b2);
    assert_eq!((srv.stats().rx_dropped, cli.stats().rx_dropped), (0, 0));
    assert_eq!(srv.errors(), Default::default());
    assert_eq!(pool.in_use(), 0, "no Pool buffer leaked");
}

#[test]
fn client_server_exact_counts_ring_256() {
    both_ways(8, 5000);
}

#[test]
fn client_server_exact_counts_ring_16384() {
    both_ways(14, 40_000);
}

#[test]
fn ring_size_is_the_smaller_of_both_sides() {
    let dir = TempDir::new("rsize");
    let sock = dir.sock("m.sock");
    let mut s = MemifConfig::new("srv", &sock, 0, Role::Server);
    s.ring_size_log2 = 9;
    let mut c = MemifConfig::new("cli", &sock, 0, Role::Client);
    c.ring_size_log2 = 12;
    let (mut srv, mut cli) = (MemifPort::new(s).unwrap(), MemifPort::new(c).unwrap());
    connect_all(&mut [&mut srv, &mut cli]);
    assert_eq!((srv.ring_size_log2(), cli.ring_size_log2()), (9, 9));
    assert!(
        srv.describe().contains("ring=512 (2^9)"),
        "{}",
        srv.describe()
    );
    assert!(
        srv.describe().contains("state=connected"),
        "{}",
        srv.describe()
    );
    assert!(
        cli.describe().starts_with("memif client socket="),
        "{}",
        cli.describe()
    );
}

#[test]
fn one_socket_serves_two_ids() {
    let dir = TempDir::new("ids");
    let sock = dir.sock("shared.sock");
    let mut s0 = MemifPort::new(MemifConfig::new("s0", &sock, 0, Role::Server)).unwrap();
    let mut s1 = MemifPort::new(MemifConfig::new("s1", &sock, 1, Role::Server)).unwrap();
    let mut c0 = MemifPort::new(MemifConfig::new("c0", &sock, 0, Role::Client)).unwrap();
    let mut c1 = MemifPort::new(MemifConfig::new("c1", &sock, 1, Role::Client)).unwrap();
    // A second server with an id already served on this socket is refused.
    let dup = MemifPort::new(MemifConfig::new("s0b", &sock, 0, Role::Server)).unwrap_err();
    assert!(
        matches!(dup, MemifError::DuplicateId { id: 0, .. }),
        "{dup}"
    );
    connect_all(&mut [&mut s0, &mut s1, &mut c0, &mut c1]);
    let mut pool = Pool::new(1024);
    transfer(&mut c0, &mut s0, &mut pool, 300);
    transfer(&mut c1, &mut s1, &mut pool, 200);
    transfer(&mut s1, &mut c1, &mut pool, 100);
    assert_eq!((s0.stats().rx_packets, s1.stats().rx_packets), (300, 200));
    assert_eq!((c0.stats().rx_packets, c1.stats().rx_packets), (0, 100));
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn unknown_id_is_refused_with_reason() {
    let dir = TempDir::new("noid");
    let sock = dir.sock("m.sock");
    let mut srv = MemifPort::new(MemifConfig::new("srv", &sock, 0, Role::Server)).unwrap();
    let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 7, Role::Client)).unwrap();
    for _ in 0..2000 {
        srv.poll_control();
        cli.poll_control();
        if cli.last_disconnect().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(cli.last_disconnect(), Some("peer: ID not found"));
    assert_eq!(srv.link(), LinkState::Down);
    assert_eq!(cli.link(), LinkState::Down);
}

#[test]
fn secret_must_match() {
    let dir = TempDir::new("secret");
    let sock = dir.sock("m.sock");
    let mut s = MemifConfig::new("srv", &sock, 0, Role::Server);
    s.secret = Some("open sesame".into());
    let mut srv = MemifPort::new(s).unwrap();
    let mut c = MemifConfig::new("cli", &sock, 0, Role::Client);
    c.secret = Some("wrong".into());
    let mut cli = MemifPort::new(c).unwrap();
    for _ in 0..2000 {
        srv.poll_control();
        cli.poll_control();
        if cli.last_disconnect().is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(cli.last_disconnect(), Some("peer: Incorrect secret"));
    drop(cli);
    let mut c = MemifConfig::new("cli2", &sock, 0, Role::Client);
    c.secret = Some("open sesame".into());
    let mut cli = MemifPort::new(c).unwrap();
    connect_all(&mut [&mut srv, &mut cli]);
}

#[test]
fn abstract_socket_connects() {
    let name = format!("@vecswitch-test-{}", std::process::id());
    let mut srv = MemifPort::new(MemifConfig::new("srv", &name, 3, Role::Server)).unwrap();
    let mut cli = MemifPort::new(MemifConfig::new("cli", &name, 3, Role::Client)).unwrap();
    connect_all(&mut [&mut srv, &mut cli]);
    let mut pool = Pool::new(256);
    transfer(&mut cli, &mut srv, &mut pool, 50);
}

fn readable(fd: std::os::fd::RawFd) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd; zero timeout.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    r == 1 && p.revents & libc::POLLIN != 0
}

#[test]
fn interrupt_mode_kicks_and_polling_mode_does_not() {
    let dir = TempDir::new("irq");
    let sock = dir.sock("m.sock");
    let mut s = MemifConfig::new("srv", &sock, 0, Role::Server);
    s.mode = Mode::Interrupt;
    let mut srv = MemifPort::new(s).unwrap();
    let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 0, Role::Client)).unwrap();
    assert_eq!(srv.rx_event_fd(), None, "no eventfd before connecting");
    connect_all(&mut [&mut srv, &mut cli]);
    let srv_fd = srv.rx_event_fd().unwrap();
    let cli_fd = cli.rx_event_fd().unwrap();
    assert!(!readable(srv_fd));
    let mut pool = Pool::new(64);
    let h = make_packet(&mut pool, &frame_bytes(0, 60));
    // Client → interrupt-mode server: the client kicks.
    assert_eq!(cli.tx_burst(&mut pool, &[h]), 1);
    assert!(readable(srv_fd), "server (interrupt mode) eventfd kicked");
    let mut out = Vec::new();
    assert_eq!(srv.rx_burst(&mut pool, &mut out, 32), 1);
    assert!(!readable(srv_fd), "rx_burst drained the eventfd");
    // Server → polling-mode client: no kick.
    assert_eq!(srv.tx_burst(&mut pool, &[h]), 1);
    assert!(!readable(cli_fd), "client (polling mode) masked its ring");
    assert_eq!(cli.rx_burst(&mut pool, &mut out, 32), 1);
    pool.free(h);
    pool.free_bulk(&out);
    assert_eq!(pool.in_use(), 0);
}

#[test]
fn tx_while_down_is_counted_not_sent() {
    let dir = TempDir::new("down");
    let mut cli = MemifPort::new(MemifConfig::new(
        "cli",
        &dir.sock("none.sock"),
        0,
        Role::Client,
    ))
    .unwrap();
    cli.poll_control();
    assert_eq!(cli.state(), MemifState::Idle);
    let mut pool = Pool::new(8);
    let h = make_packet(&mut pool, &[0u8; 60]);
    assert_eq!(cli.tx_burst(&mut pool, &[h, h]), 0);
    assert_eq!(cli.stats().tx_dropped, 2);
    assert_eq!(cli.errors().tx_link_down, 2);
    pool.free(h);
}

#[test]
fn config_errors_name_field_value_and_range() {
    let mut c = MemifConfig::new("m", "/tmp/x.sock", 0, Role::Server);
    c.ring_size_log2 = 7;
    let e = MemifPort::new(c.clone()).unwrap_err().to_string();
    assert!(
        e.contains("ring_size_log2") && e.contains(" 7 ") && e.contains("8..=14"),
        "{e}"
    );
    c.ring_size_log2 = 15;
    assert!(MemifPort::new(c.clone())
        .unwrap_err()
        .to_string()
        .contains("= 15"));
    c.ring_size_log2 = 10;
    c.buffer_size = 64;
    let e = MemifPort::new(c.clone()).unwrap_err().to_string();
    assert!(
        e.contains("buffer_size") && e.contains("64") && e.contains("128..=65535"),
        "{e}"
    );
    c.buffer_size = 2048;
    c.num_queues = 2;
    assert!(MemifPort::new(c.clone())
        .unwrap_err()
        .to_string()
        .contains("num_queues"));
    c.num_queues = 1;
    c.secret = Some("x".repeat(25));
    assert!(MemifPort::new(c.clone())
        .unwrap_err()
        .to_string()
        .contains("secret"));
    c.secret = None;
    c.socket_path = "/".repeat(200);
    let e = MemifPort::new(c.clone()).unwrap_err().to_string();
    assert!(e.contains("socket_path") && e.contains("1..=107"), "{e}");
}

#[test]
fn buffer_size_smaller_than_frames_chains_more() {
    let dir = TempDir::new("bsize");
    let sock = dir.sock("m.sock");
    let srv = MemifConfig::new("srv", &sock, 0, Role::Server);
    let mut c = MemifConfig::new("cli", &sock, 0, Role::Client);
    c.buffer_size = 128;
    let (mut srv, mut cli) = (MemifPort::new(srv).unwrap(), MemifPort::new(c).unwrap());
    connect_all(&mut [&mut srv, &mut cli]);
    let mut pool = Pool::new(2048);
    transfer(&mut cli, &mut srv, &mut pool, 500);
    transfer(&mut srv, &mut cli, &mut pool, 500);
    assert_eq!(pool.in_use(), 0);
}
