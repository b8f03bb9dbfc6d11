//! Reconnection without leaks: peers leave and come back (client dropped, server dropped and
//! re-created, a raw peer that hangs up or talks nonsense), traffic flows after each reconnect, and
//! at the end the process has exactly the file descriptors and shared mappings it started with and
//! every Pool buffer is free.
//!
//! One test function only: it counts this process's fds and mappings, which other tests running in
//! parallel threads would disturb.

mod memif_common;

use memif_common::*;
use std::time::{Duration, Instant};
use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, MemifState, Role};
use vecswitch_ports::{LinkState, Port};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// [`memif_mappings`] once it is `n`, or after 2 s: a finished connection is unmapped by the memif
/// setup thread, not by the port (crates/ports/src/memif/mod.rs), a moment later.
fn memif_mappings_settled(n: usize) -> usize {
    for _ in 0..200 {
        if memif_mappings() == n {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    memif_mappings()
}

fn memif_mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter(|l| l.contains("memif_region"))
        .count()
}

fn wait_down(p: &mut MemifPort) {
    let t0 = Instant::now();
    while p.link() == LinkState::Up {
        p.poll_control();
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{} did not notice the peer leaving",
            p.describe()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A raw SOCK_SEQPACKET client, for peers that misbehave.
struct RawPeer(i32);

impl RawPeer {
    fn connect(path: &str) -> RawPeer {
        // SAFETY: plain socket syscalls on a sockaddr_un we fill in; the fd is closed in Drop.
        unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0);
            assert!(fd >= 0);
            let mut sun: libc::sockaddr_un = std::mem::zeroed();
            sun.sun_family = libc::AF_UNIX as _;
            for (i, b) in path.bytes().enumerate() {
                sun.sun_path[i] = b as _;
            }
            let r = libc::connect(
                fd,
                &sun as *const _ as *const _,
                std::mem::size_of_val(&sun) as _,
            );
            assert_eq!(r, 0, "connect {path}");
            let tv = libc::timeval {
                tv_sec: 10,
                tv_usec: 0,
            };
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &tv as *const _ as *const _,
                16,
            );
            RawPeer(fd)
        }
    }
    /// Receives one record while `srv` is polled by another thread... here: polls `srv` in between.
    fn recv(&self, srv: &mut MemifPort) -> Vec<u8> {
        let mut buf = [0u8; 256];
        let t0 = Instant::now();
        loop {
            srv.poll_control();
            // SAFETY: reads into a live buffer of its length; MSG_DONTWAIT never blocks.
            let n = unsafe {
                libc::recv(
                    self.0,
                    buf.as_mut_ptr() as *mut _,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 0 {
                return buf[..n as usize].to_vec();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "no message from server"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    fn send(&self, b: &[u8]) {
        // SAFETY: sends from a live buffer of its length.
        let n = unsafe { libc::send(self.0, b.as_ptr() as *const _, b.len(), 0) };
        assert_eq!(n, b.len() as isize);
    }
}

impl Drop for RawPeer {
    fn drop(&mut self) {
        // SAFETY: closes the fd this guard owns.
        unsafe { libc::close(self.0) };
    }
}

#[test]
fn peers_leave_and_return_without_leaks() {
    let fds0 = open_fds();
    let maps0 = memif_mappings();
    let dir = TempDir::new("reconnect");
    let sock = dir.sock("m.sock");
    let mut pool = Pool::new(2048);
    {
        let mut srv = MemifPort::new(MemifConfig::new("srv", &sock, 0, Role::Server)).unwrap();

        // 1. The client goes away and a new one comes, several times.
        for round in 1..=4u64 {
            let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 0, Role::Client)).unwrap();
            connect_all(&mut [&mut srv, &mut cli]);
            assert_eq!(srv.connects(), round);
            assert_eq!(
                memif_mappings_settled(maps0 + 2),
                maps0 + 2,
                "one region mapped by each side"
            );
            transfer(&mut cli, &mut srv, &mut pool, 200);
            transfer(&mut srv, &mut cli, &mut pool, 200);
            drop(cli);
            wait_down(&mut srv);
            assert_eq!(srv.last_disconnect(), Some("peer: Interface deleted"));
            assert_eq!(srv.state(), MemifState::Idle);
            assert_eq!(
                memif_mappings_settled(maps0),
                maps0,
                "server unmapped the region"
            );
        }

        // 2. A raw peer hangs up in the middle of the handshake, another sends garbage.
        {
            let raw = RawPeer::connect(&sock);
            let hello = raw.recv(&mut srv);
            assert_eq!((hello.len(), hello[0]), (128, 2), "HELLO first");
        }
        {
            let raw = RawPeer::connect(&sock);
            raw.recv(&mut srv);
            let mut junk = [0u8; 128];
            junk[0] = 99;
            raw.send(&junk);
            let d = raw.recv(&mut srv);
            assert_eq!(d[0], 8, "DISCONNECT");
            assert!(String::from_utf8_lossy(&d[6..]).starts_with("Invalid message"));
        }
        {
            // INIT for our id, then a short record: the port itself rejects it.
            let raw = RawPeer::connect(&sock);
            raw.recv(&mut srv);
            let mut init = [0u8; 128];
            init[0] = 3;
            init[2..4].copy_from_slice(&0x0200u16.to_le_bytes());
            raw.send(&init);
            assert_eq!(raw.recv(&mut srv)[0], 1, "ACK for INIT");
            raw.send(&[5, 0, 0]);
            let d = raw.recv(&mut srv);
            assert_eq!(d[0], 8);
            assert!(String::from_utf8_lossy(&d[6..]).starts_with("Invalid message size"));
            assert_eq!(srv.state(), MemifState::Idle);
        }

        // 3. The server goes away; the client keeps retrying and reconnects to a new server.
        let mut cli = MemifPort::new(MemifConfig::new("cli", &sock, 0, Role::Client)).unwrap();
        connect_all(&mut [&mut srv, &mut cli]);
        drop(srv);
        wait_down(&mut cli);
        assert_eq!(cli.last_disconnect(), Some("peer: Interface deleted"));
        for _ in 0..50 {
            cli.poll_control(); // retries fail: nobody listens
        }
        assert_eq!(cli.link(), LinkState::Down);
        let mut srv = MemifPort::new(MemifConfig::new("srv2", &sock, 0, Role::Server)).unwrap();
        connect_all(&mut [&mut srv, &mut cli]);
        assert_eq!(cli.connects(), 2);
        transfer(&mut cli, &mut srv, &mut pool, 300);
        transfer(&mut srv, &mut cli, &mut pool, 300);
    }
    assert_eq!(pool.in_use(), 0, "no Pool buffer leaked");
    // A finished connection is unmapped and closed by the memif setup thread, not by the port
    // (crates/ports/src/memif/mod.rs): allow it a moment.
    let settled = |f: &dyn Fn() -> bool| {
        for _ in 0..200 {
            if f() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    assert_eq!(
        memif_mappings_settled(maps0),
        maps0,
        "no shared mapping leaked"
    );
    assert!(
        !std::path::Path::new(&sock).exists(),
        "socket file removed with its last server"
    );
    drop(dir);
    settled(&|| open_fds() == fds0);
    assert_eq!(open_fds(), fds0, "no file descriptor leaked");
}
