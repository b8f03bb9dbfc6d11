//! Faults a running switch must survive (issue 14 item 3), each on the real `vecswitch run`
//! process:
//! - a reload that fails midway leaves learned MACs, port counters and `show errors` exactly as
//!   they were (the undo puts back the learned entries a member's or bridge's removal flushed);
//! - a memif peer process killed with SIGKILL under load and started again: the link is back within
//!   1 s of the new peer's start, traffic resumes, and the switch's buffers in use return to their
//!   baseline;
//! - `kill -9` of the switch itself and a restart with the same config: its memif and AF_PACKET
//!   peers carry traffic again;
//! - an AF_PACKET port's interface deleted under the running switch and created again: down with
//!   the reason shown, then re-opened on the new device, traffic across again.
//!
//! Every process is killed by a Drop guard and every temporary directory and veth removed, even
//! when a test fails (`vecswitch-testsupport`: RunningSwitch, TempDir, Veth).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::memif::{MemifConfig, MemifPort, Role};
use vecswitch_ports::{LinkState, Port};
use vecswitch_testsupport::{unique_name, RunningSwitch, TempDir, Veth};

const BIN: &str = env!("CARGO_BIN_EXE_vecswitch");

fn memif_client(sock: &Path, id: u32) -> MemifPort {
    MemifPort::new(MemifConfig::new(
        "peer",
        &sock.display().to_string(),
        id,
        Role::Client,
    ))
    .unwrap()
}

fn wait_up(peer: &mut MemifPort, what: &str, within: Duration) {
    let deadline = Instant::now() + within;
    while peer.link() != LinkState::Up {
        assert!(
            Instant::now() < deadline,
            "{what}: memif link not up within {within:?}"
        );
        peer.poll_control();
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f
}

/// Sends each frame once (retrying while the ring is full).
fn send(peer: &mut MemifPort, frames: &[Vec<u8>]) {
    let mut pool = Pool::new(64);
    for f in frames {
        let h = pool.alloc().unwrap();
        assert!(pool.write_packet(h, f));
        let deadline = Instant::now() + Duration::from_secs(10);
        while peer.tx_burst(&mut pool, &[h]) == 0 {
            assert!(Instant::now() < deadline, "memif ring stayed full");
            peer.poll_control();
            std::thread::sleep(Duration::from_millis(1));
        }
        pool.free(h);
    }
}

/// Receives what waits on `peer`; returns how many frames.
fn drain(peer: &mut MemifPort, pool: &mut Pool) -> usize {
    let mut hs = Vec::new();
    let mut n = 0;
    loop {
        hs.clear();
        peer.poll_control();
        let got = peer.rx_burst(pool, &mut hs, 64);
        if got == 0 {
            return n;
        }
        n += got;
        pool.free_bulk(&hs);
    }
}

/// `show mac` without the ages (they move with the clock), sorted.
fn macs(sw: &RunningSwitch) -> Vec<(String, String, String, bool)> {
    let mut v: Vec<_> = sw.json("show mac")["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["bridge"].as_str().unwrap().to_string(),
                m["mac"].as_str().unwrap().to_string(),
                m["port"].as_str().unwrap().to_string(),
                m["static"].as_bool().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn memif_port(name: &str, sock: &Path, id: u32) -> String {
    format!(
        "\n[[port]]\nname = \"{name}\"\ntype = \"memif\"\nsocket = \"{}\"\nid = {id}\n",
        sock.display()
    )
}

/// A reload that removes a bridge member (and, second time, the whole bridge) and then fails
/// (re-creating port p2 on a socket path whose parent is a regular file) is undone: `show mac`
/// (learned and static entries), `show ports` counters and link states and `show errors` are
/// exactly as before, the memif peers were not reconnected, and known unicast still goes to its
/// one port.
#[test]
fn a_failed_reload_leaves_learned_macs_and_counters_exactly_as_they_were() {
    let d = TempDir::new("reload");
    let m = d.path("memif.sock");
    let base = format!(
        "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}{}{}
[[bridge]]
name = \"br0\"
ports = [\"p0\", \"p1\"]
  [[bridge.static_mac]]
  mac = \"02:00:00:00:00:99\"
  port = \"p1\"
",
        memif_port("p0", &m, 0),
        memif_port("p1", &m, 1),
        memif_port("p2", &m, 2),
    );
    let cfg = d.path("switch.toml");
    std::fs::write(&cfg, &base).unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    let mut p0 = memif_client(&m, 0);
    let mut p1 = memif_client(&m, 1);
    wait_up(&mut p0, "p0", Duration::from_secs(20));
    wait_up(&mut p1, "p1", Duration::from_secs(20));
    // Stations 1..=5 behind p0, 6..=8 behind p1, broadcast so that every frame floods.
    let st = |i: u8| [2, 0, 0, 0, 0, i];
    send(
        &mut p0,
        &(1..=5).map(|i| frame([0xff; 6], st(i))).collect::<Vec<_>>(),
    );
    send(
        &mut p1,
        &(6..=8).map(|i| frame([0xff; 6], st(i))).collect::<Vec<_>>(),
    );
    let mut pool = Pool::new(256);
    let deadline = Instant::now() + Duration::from_secs(20);
    while macs(&sw).len() < 9 {
        assert!(Instant::now() < deadline, "learned {:?}", macs(&sw));
        drain(&mut p0, &mut pool);
        drain(&mut p1, &mut pool);
        std::thread::sleep(Duration::from_millis(10));
    }
    drain(&mut p0, &mut pool);
    drain(&mut p1, &mut pool);
    let before_macs = macs(&sw);
    let before_ports = sw.json("show ports");
    let before_errors = sw.json("show errors");
    let connects = (p0.connects(), p1.connects());

    let blocker = d.path("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let bad_p2 = memif_port("p2", &blocker.join("memif.sock"), 2);
    let without_p1 = base
        .replace(&memif_port("p2", &m, 2), &bad_p2)
        .replace("ports = [\"p0\", \"p1\"]", "ports = [\"p0\"]")
        .replace(
            "  [[bridge.static_mac]]\n  mac = \"02:00:00:00:00:99\"\n  port = \"p1\"\n",
            "",
        );
    let without_bridge = format!(
        "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}{}{}",
        memif_port("p0", &m, 0),
        memif_port("p1", &m, 1),
        bad_p2
    );
    for (what, text) in [
        ("member p1 removed", without_p1),
        ("bridge removed", without_bridge),
    ] {
        std::fs::write(&cfg, &text).unwrap();
        let out = sw.ctl("reload");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{what}: the reload should fail");
        assert!(
            err.contains("p2") && err.contains("nothing was changed"),
            "{what}: {err}"
        );
        assert_eq!(macs(&sw), before_macs, "{what}: show mac");
        assert_eq!(sw.json("show ports"), before_ports, "{what}: show ports");
        assert_eq!(sw.json("show errors"), before_errors, "{what}: show errors");
        for p in [&mut p0, &mut p1] {
            p.poll_control();
            assert_eq!(p.link(), LinkState::Up, "{what}");
        }
        assert_eq!(
            (p0.connects(), p1.connects()),
            connects,
            "{what}: peers kept"
        );
    }
    // The table still works: station 1 (behind p0) is known, so p1's frame to it goes to p0 only.
    send(&mut p1, &[frame(st(1), st(6))]);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = 0;
    while got == 0 {
        assert!(
            Instant::now() < deadline,
            "the unicast frame did not arrive"
        );
        got += drain(&mut p0, &mut pool);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(got, 1);
    let p2 = sw.port("p2");
    assert_eq!(p2["stats"]["tx_packets"], 0, "not flooded: {p2}");
    std::fs::write(&cfg, &base).unwrap();
}

/// Sends 60-byte frames from `peer` as fast as the ring takes them until `stop`; counts them.
fn load(mut peer: MemifPort, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) -> MemifPort {
    let mut pool = Pool::new(256);
    let f = frame([2, 0, 0, 0, 0, 0xee], [2, 0, 0, 0, 0, 0x11]);
    let mut hs = Vec::with_capacity(32);
    while !stop.load(Ordering::Relaxed) {
        peer.poll_control();
        hs.clear();
        for _ in 0..32 {
            let h = pool.alloc().unwrap();
            assert!(pool.write_packet(h, &f));
            hs.push(h);
        }
        let n = peer.tx_burst(&mut pool, &hs);
        pool.free_bulk(&hs);
        sent.fetch_add(n as u64, Ordering::Relaxed);
        // About 100-200 kfps: load, without starving the other processes on a 2-core host.
        std::thread::sleep(Duration::from_micros(200));
    }
    peer
}

/// The peer of the switch's port p0: another `vecswitch run` with a memif *client* port on the
/// switch's socket, in a bridge on its own (it counts what it receives and drops it).
fn peer_config(d: &TempDir, m: &Path) -> PathBuf {
    let cfg = d.path("peer.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n
[[port]]\nname = \"c0\"\ntype = \"memif\"\nsocket = \"{}\"\nid = 0\nrole = \"client\"\n
[[bridge]]\nname = \"sink\"\nports = [\"c0\"]\n",
            m.display()
        ),
    )
    .unwrap();
    cfg
}

fn rx_of(sw: &RunningSwitch, port: &str) -> u64 {
    sw.port(port)["stats"]["rx_packets"].as_u64().unwrap()
}

fn wait_for(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Under load (an in-process memif client sends into p1, cross-connected to p0), the process on
/// p0's other end is killed with SIGKILL and started again: the switch's p0 goes down, comes back
/// within 1 s of the new peer's start, traffic reaches the new peer, and once the load stops the
/// switch's buffers in use are back at their baseline (nothing leaked while the peer was gone).
#[test]
fn a_memif_peer_killed_under_load_and_restarted_comes_back_within_1s() {
    let d = TempDir::new("peer");
    let m = d.path("memif.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}{}\n[[xconnect]]\nports = [\"p0\", \"p1\"]\n",
            memif_port("p0", &m, 0),
            memif_port("p1", &m, 1)
        ),
    )
    .unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    let baseline = sw.json("show buffers")["in_use"].as_u64().unwrap();
    let pcfg = peer_config(&d, &m);
    let mut peer = RunningSwitch::start(BIN, &pcfg, &d.path("peer.sock"));
    wait_for("p0 up", Duration::from_secs(20), || {
        sw.port("p0")["link"] == "up"
    });
    let mut src = memif_client(&m, 1);
    wait_up(&mut src, "p1", Duration::from_secs(20));
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let loader = {
        let (stop, sent) = (Arc::clone(&stop), Arc::clone(&sent));
        std::thread::spawn(move || load(src, stop, sent))
    };
    wait_for("traffic at the first peer", Duration::from_secs(20), || {
        rx_of(&peer, "c0") > 1000
    });

    peer.stop();
    wait_for(
        "p0 down after the peer died",
        Duration::from_secs(10),
        || sw.port("p0")["link"] == "down",
    );
    let tx_while_down = sw.port("p0")["stats"]["tx_packets"].as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(300)); // load keeps coming while nobody listens

    let restarted = Instant::now();
    let peer = RunningSwitch::start(BIN, &pcfg, &d.path("peer.sock"));
    wait_for("p0 up after the restart", Duration::from_secs(20), || {
        sw.port("p0")["link"] == "up"
    });
    let back_in = restarted.elapsed();
    assert!(
        back_in < Duration::from_secs(1),
        "p0 up {back_in:?} after the peer's restart (the peer process took part of it to start)"
    );
    wait_for("traffic at the new peer", Duration::from_secs(20), || {
        rx_of(&peer, "c0") > 1000
    });
    let p0 = sw.port("p0");
    assert!(
        p0["stats"]["tx_packets"].as_u64().unwrap() > tx_while_down,
        "{p0}"
    );

    stop.store(true, Ordering::Relaxed);
    let _src = loader.join().unwrap();
    wait_for("buffers back to baseline", Duration::from_secs(10), || {
        sw.json("show buffers")["in_use"].as_u64().unwrap() == baseline
    });
    // Every frame the source placed on p1's ring was received or counted as dropped by the switch.
    let total = sent.load(Ordering::Relaxed);
    wait_for(
        "p1 accounts for every frame",
        Duration::from_secs(10),
        || {
            let s = &sw.port("p1")["stats"];
            s["rx_packets"].as_u64().unwrap() + s["rx_dropped"].as_u64().unwrap() == total
        },
    );
}

/// `kill -9` of the switch under a memif peer, and a restart with the same config: the peer
/// (a client, which retries) reconnects by itself, and frames cross again.
#[test]
fn kill_9_of_the_switch_and_a_restart_with_the_same_config_reconnects_its_memif_peers() {
    let d = TempDir::new("kill9");
    let m = d.path("memif.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}{}\n[[xconnect]]\nports = [\"p0\", \"p1\"]\n",
            memif_port("p0", &m, 0),
            memif_port("p1", &m, 1)
        ),
    )
    .unwrap();
    let ctl = d.path("ctl.sock");
    let mut sw = RunningSwitch::start(BIN, &cfg, &ctl);
    let mut a = memif_client(&m, 0);
    let mut b = memif_client(&m, 1);
    wait_up(&mut a, "a", Duration::from_secs(20));
    wait_up(&mut b, "b", Duration::from_secs(20));
    let mut pool = Pool::new(256);
    let cross = |a: &mut MemifPort, b: &mut MemifPort, pool: &mut Pool, n: usize| {
        send(a, &vec![frame([0xff; 6], [2, 0, 0, 0, 0, 1]); n]);
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut got = 0;
        while got < n {
            assert!(Instant::now() < deadline, "{got} of {n} frames crossed");
            got += drain(b, pool);
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(got, n);
    };
    cross(&mut a, &mut b, &mut pool, 10);

    sw.stop();
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.link() == LinkState::Up || b.link() == LinkState::Up {
        assert!(
            Instant::now() < deadline,
            "the peers did not see the switch die"
        );
        a.poll_control();
        b.poll_control();
        std::thread::sleep(Duration::from_millis(5));
    }
    // The dead switch left its socket files behind; the new one replaces them.
    let sw = RunningSwitch::start(BIN, &cfg, &ctl);
    wait_up(&mut a, "a after restart", Duration::from_secs(20));
    wait_up(&mut b, "b after restart", Duration::from_secs(20));
    cross(&mut a, &mut b, &mut pool, 10);
    assert_eq!(sw.port("p0")["stats"]["rx_packets"], 10, "a fresh switch");
}

/// `kill -9` of a switch that cross-connects a memif port (peer: a memif client in this process)
/// and an AF_PACKET port on a veth (peer: an AF_PACKET socket on the veth's other end, in this
/// process), then a restart with the same config: both peers carry traffic again in both
/// directions — the memif client reconnects by itself, the AF_PACKET peer just keeps its socket.
/// Needs root (the veth pair), as CI runs.
#[test]
fn kill_9_and_restart_memif_and_af_packet_peers_carry_traffic_again() {
    use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
    let d = TempDir::new("kill9afp");
    let vname = unique_name("vsf");
    let veth = Veth::new(&vname, &format!("{vname}p"));
    let m = d.path("memif.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}\n[[port]]\nname = \"e0\"\ntype = \"af_packet\"\ninterface = \"{}\"\n\n[[xconnect]]\nports = [\"m0\", \"e0\"]\n",
            memif_port("m0", &m, 0),
            veth.a()
        ),
    )
    .unwrap();
    let ctl = d.path("ctl.sock");
    let mut wire = AfPacketPort::open(AfPacketConfig::new("wire", veth.b()))
        .expect("AF_PACKET on the veth's peer end (needs root)");
    let mut mem = memif_client(&m, 0);
    let mut pool = Pool::new(512);
    // Frames marked by their source MAC, so that anything else the kernel sends is not counted.
    let from_mem = frame([0xff; 6], [2, 0, 0, 0, 0, 0xa1]);
    let from_wire = frame([0xff; 6], [2, 0, 0, 0, 0, 0xb2]);
    let count = |p: &mut dyn Port, pool: &mut Pool, src: u8| {
        let mut hs = Vec::new();
        let mut n = 0;
        p.poll_control();
        while p.rx_burst(pool, &mut hs, 64) > 0 {
            n += hs
                .iter()
                .filter(|&&h| pool.data(h).get(11) == Some(&src))
                .count();
            pool.free_bulk(&hs);
            hs.clear();
        }
        n
    };
    let both_ways = |mem: &mut MemifPort, wire: &mut AfPacketPort, pool: &mut Pool, what: &str| {
        // The switch may be up a moment before its AF_PACKET socket is; send until frames cross.
        let deadline = Instant::now() + Duration::from_secs(20);
        let (mut to_wire, mut to_mem) = (0, 0);
        while to_wire < 5 || to_mem < 5 {
            assert!(
                Instant::now() < deadline,
                "{what}: {to_wire} frames memif -> veth, {to_mem} veth -> memif"
            );
            send(mem, std::slice::from_ref(&from_mem));
            let h = pool.alloc().unwrap();
            assert!(pool.write_packet(h, &from_wire));
            wire.tx_burst(pool, &[h]);
            pool.free(h);
            std::thread::sleep(Duration::from_millis(20));
            to_wire += count(wire, pool, 0xa1);
            to_mem += count(mem, pool, 0xb2);
        }
    };

    let mut sw = RunningSwitch::start(BIN, &cfg, &ctl);
    wait_up(&mut mem, "memif before", Duration::from_secs(20));
    both_ways(&mut mem, &mut wire, &mut pool, "before the kill");

    sw.stop();
    let deadline = Instant::now() + Duration::from_secs(10);
    while mem.link() == LinkState::Up {
        assert!(
            Instant::now() < deadline,
            "the memif peer did not see the switch die"
        );
        mem.poll_control();
        std::thread::sleep(Duration::from_millis(5));
    }
    let _sw = RunningSwitch::start(BIN, &cfg, &ctl);
    wait_up(&mut mem, "memif after the restart", Duration::from_secs(20));
    both_ways(&mut mem, &mut wire, &mut pool, "after the restart");
    assert_eq!(pool.in_use(), 0);
}

/// An interface removed under a running switch: its AF_PACKET port goes down, and when an
/// interface of the same name comes back the port carries traffic again.
///
/// An AF_PACKET port's interface deleted under a running switch and created again (issue 14
/// item 3): the port goes `down` with the reason in `show ports` (its socket lost its device),
/// then, once a veth of the same name exists again, re-opens itself on the new device (a new
/// ifindex) and traffic crosses again; `show errors` counts the re-open. Before the fix the port
/// said `link up` over a socket still bound to the old ifindex: a silent black hole. Needs root
/// (the veth pair), as CI runs.
#[test]
fn interface_removed_under_a_running_switch_goes_down_and_comes_back() {
    use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
    let d = TempDir::new("ifrm");
    let name = unique_name("vsr");
    let mut veth = Some(Veth::new(&name, &format!("{name}p")));
    let m = d.path("memif.sock");
    let cfg = d.path("switch.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nbuffers = 4096\nmac_table_entries = 4096\n{}\n[[port]]\nname = \"e0\"\ntype = \"af_packet\"\ninterface = \"{name}\"\n\n[[xconnect]]\nports = [\"e0\", \"m0\"]\n",
            memif_port("m0", &m, 0)
        ),
    )
    .unwrap();
    let sw = RunningSwitch::start(BIN, &cfg, &d.path("ctl.sock"));
    let mut mem = memif_client(&m, 0);
    wait_up(&mut mem, "memif", Duration::from_secs(20));
    let mut pool = Pool::new(512);
    let marked = frame([0xff; 6], [2, 0, 0, 0, 0, 0xc3]);
    let crosses = |mem: &mut MemifPort, pool: &mut Pool, what: &str| {
        let mut wire = AfPacketPort::open(AfPacketConfig::new("wire", &format!("{name}p")))
            .expect("AF_PACKET on the veth's peer end (needs root)");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut got = 0;
        while got < 5 {
            assert!(Instant::now() < deadline, "{what}: {got} frames crossed");
            let h = pool.alloc().unwrap();
            assert!(pool.write_packet(h, &marked));
            wire.tx_burst(pool, &[h]);
            pool.free(h);
            std::thread::sleep(Duration::from_millis(20));
            let mut hs = Vec::new();
            mem.poll_control();
            while mem.rx_burst(pool, &mut hs, 64) > 0 {
                got += hs
                    .iter()
                    .filter(|&&h| pool.data(h).get(11) == Some(&0xc3))
                    .count();
                pool.free_bulk(&hs);
                hs.clear();
            }
        }
    };
    crosses(&mut mem, &mut pool, "before");
    let ifindex = |d: &str| {
        d.split("ifindex ")
            .nth(1)
            .and_then(|t| t.split_whitespace().next())
            .map(str::to_string)
    };
    let ifindex_before = ifindex(sw.port("e0")["describe"].as_str().unwrap());
    assert!(ifindex_before.is_some());
    veth.take(); // ip link del
    wait_for(
        "e0 down, saying why, after its interface went",
        Duration::from_secs(5),
        || {
            let p = sw.port("e0");
            p["link"] == "down"
                && p["describe"]
                    .as_str()
                    .is_some_and(|d| d.contains(&format!("down: interface {name} removed")))
        },
    );
    veth = Some(Veth::new(&name, &format!("{name}p")));
    wait_for(
        "e0 up after its interface came back",
        Duration::from_secs(5),
        || sw.port("e0")["link"] == "up",
    );
    let p = sw.port("e0");
    let d = p["describe"].as_str().unwrap();
    assert!(
        d.contains("re-opened 1 time on a re-created interface") && !d.contains("down:"),
        "{d}"
    );
    assert_ne!(
        ifindex(d),
        ifindex_before,
        "a new device, a new ifindex: {d}"
    );
    crosses(&mut mem, &mut pool, "after the interface came back");
    let reopened: Vec<_> = sw
        .json("show errors")
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["node"] == "port e0" && e["reason"] == "interface-re-opened")
        .map(|e| e["count"].as_u64().unwrap())
        .collect();
    assert_eq!(reopened, [1], "show errors counts the re-open");
    drop(veth);
}
