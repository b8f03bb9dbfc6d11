//! Namespaces, veth pairs, stale cleanup and topology building — created and removed for real
//! (needs root, as CI runs). Every test cleans up through the guards even when an assert fails.

use std::process::Command;
use std::time::Duration;

use vecswitch_testbed::{
    cleanup_stale, veth_pair, Link, Netns, RunId, Testbed, Topology, DEFAULT_PREFIX,
};

fn netns_list() -> String {
    String::from_utf8(
        Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
}

fn ns_has_link(ns: &str, ifname: &str) -> bool {
    Command::new("ip")
        .args(["-n", ns, "link", "show", "dev", ifname])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn netns_and_veth_guards_create_and_remove() {
    let id = RunId::new();
    let (a_name, b_name) = (format!("{id}-a"), format!("{id}-b"));
    {
        let a = Netns::create(&a_name).unwrap();
        let b = Netns::create(&b_name).unwrap();
        veth_pair(&a, "x0", &b, "y0").unwrap();
        let list = netns_list();
        assert!(list.contains(&a_name) && list.contains(&b_name), "{list}");
        assert!(ns_has_link(&a_name, "x0"));
        assert!(ns_has_link(&b_name, "y0"));
        // The root namespace never sees the test links.
        assert!(!ns_has_link_root("x0") && !ns_has_link_root("y0"));
        a.link_up("x0").unwrap();
        b.link_up("y0").unwrap();
        vecswitch_testbed::wait_for("veth carrier", Duration::from_secs(5), || {
            a.oper_up("x0") && b.oper_up("y0")
        })
        .unwrap();
        // IPv6 is off inside the namespace (no stray RS/MLD frames on test links).
        assert_eq!(
            a.exec("sysctl", &["-n", "net.ipv6.conf.x0.disable_ipv6"])
                .unwrap()
                .trim(),
            "1"
        );
        let mac = a.mac("x0").unwrap();
        assert_eq!(mac.len(), 17, "{mac}");
    }
    let list = netns_list();
    assert!(!list.contains(&a_name) && !list.contains(&b_name), "{list}");
}

fn ns_has_link_root(ifname: &str) -> bool {
    Command::new("ip")
        .args(["link", "show", "dev", ifname])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn netns_guard_kills_processes_left_inside() {
    let id = RunId::new();
    let name = format!("{id}-k");
    let pid;
    {
        let ns = Netns::create(&name).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", &name, "sleep", "600"])
            .spawn()
            .unwrap();
        pid = child.id();
        vecswitch_testbed::wait_for("sleep inside the namespace", Duration::from_secs(5), || {
            ns.pids().contains(&(pid as i32))
        })
        .unwrap();
        // `child` is not waited here on purpose: the guard must end it.
        std::mem::forget(child);
    }
    // Reap it (it is our child); it must have been killed by a signal.
    let mut status = 0;
    let r = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid as i32), None).unwrap();
    if let nix::sys::wait::WaitStatus::Signaled(_, sig, _) = r {
        assert_eq!(sig, nix::sys::signal::Signal::SIGKILL);
        status = 1;
    }
    assert_eq!(status, 1, "sleep was not killed: {r:?}");
    assert!(!netns_list().contains(&name));
}

#[test]
fn run_in_enters_the_namespace_on_its_own_thread() {
    let id = RunId::new();
    let ns = Netns::create(&format!("{id}-r")).unwrap();
    let outside = std::fs::read_link("/proc/thread-self/ns/net").unwrap();
    let inside = ns
        .run_in(|| std::fs::read_link("/proc/thread-self/ns/net").unwrap())
        .unwrap();
    assert_ne!(inside, outside);
    // The caller's thread did not move.
    assert_eq!(
        std::fs::read_link("/proc/thread-self/ns/net").unwrap(),
        outside
    );
    // And it is the namespace's inode.
    use std::os::unix::fs::MetadataExt;
    let ino = std::fs::metadata(ns.path()).unwrap().ino();
    assert_eq!(inside.to_string_lossy(), format!("net:[{ino}]"));
}

#[test]
fn cleanup_stale_removes_dead_runs_only() {
    // A pid that is certainly dead: a child we started and reaped.
    let mut c = Command::new("true").spawn().unwrap();
    c.wait().unwrap();
    let dead = c.id();
    let stale = format!("{DEFAULT_PREFIX}{dead}-0-stale");
    Command::new("ip")
        .args(["netns", "add", &stale])
        .status()
        .unwrap();
    // A process left running inside it, as a crashed run would leave a DUT.
    let mut orphan = Command::new("ip")
        .args(["netns", "exec", &stale, "sleep", "600"])
        .spawn()
        .unwrap();
    let stale_dir = vecswitch_testbed::rundir::base_dir().join(format!("{DEFAULT_PREFIX}{dead}-0"));
    std::fs::create_dir_all(&stale_dir).unwrap();
    let live_id = RunId::new();
    let live = Netns::create(&format!("{live_id}-live")).unwrap();

    vecswitch_testbed::wait_for(
        "orphan inside the stale namespace",
        Duration::from_secs(5),
        || {
            vecswitch_testbed::cmd::run("ip", &["netns", "pids", &stale])
                .map(|o| !o.trim().is_empty())
                .unwrap_or(false)
        },
    )
    .unwrap();
    let report = cleanup_stale(DEFAULT_PREFIX);
    assert!(report.namespaces.contains(&stale), "{report:?}");
    assert!(report.run_dirs.contains(&stale_dir), "{report:?}");
    let list = netns_list();
    assert!(!list.contains(&stale), "{list}");
    assert!(list.contains(live.name()), "live run was removed: {list}");
    assert!(!stale_dir.exists());
    let st = orphan.wait().unwrap();
    assert!(!st.success(), "orphan should have been killed: {st}");
}

#[test]
fn phy2phy_veth_topology_is_built_and_removed() {
    let (gen_ns, dut_ns, run_dir);
    {
        let tb = Testbed::build(Topology::Phy2Phy { link: Link::Veth }).unwrap();
        let w = tb.wiring().clone();
        gen_ns = w.gen_netns.clone().unwrap();
        dut_ns = w.dut_netns.clone();
        run_dir = w.run_dir.clone();
        assert_eq!(w.gen_ports.len(), 2);
        assert_eq!(w.dut_ports.len(), 2);
        assert_eq!(w.pairs, vec![(0, 1)]);
        for i in 0..2 {
            let gen = tb.gen_netns().unwrap();
            assert!(gen.oper_up(&format!("gen{i}")));
            assert!(tb.dut_netns().oper_up(&format!("dut{i}")));
            // RPS: generator ends on the generator CPU, DUT ends on the DUT CPU.
            let rps = |ns: &Netns, ifname: &str| {
                ns.exec(
                    "cat",
                    &[&format!("/sys/class/net/{ifname}/queues/rx-0/rps_cpus")],
                )
                .unwrap()
                .trim()
                .trim_start_matches('0')
                .to_string()
            };
            assert_eq!(
                rps(gen, &format!("gen{i}")),
                format!("{:x}", 1u64 << w.cores.generator)
            );
            assert_eq!(
                rps(tb.dut_netns(), &format!("dut{i}")),
                format!("{:x}", 1u64 << w.cores.dut)
            );
        }
        assert!(run_dir.is_dir());
    }
    let list = netns_list();
    assert!(!list.contains(&gen_ns) && !list.contains(&dut_ns), "{list}");
    assert!(!run_dir.exists());
}

#[test]
fn pvp_memif_wiring_pairs_phy_with_vnf_ports() {
    let tb = Testbed::build("pvp-memif".parse().unwrap()).unwrap();
    let w = tb.wiring();
    let names: Vec<&str> = w.dut_ports.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["phy0", "phy1", "vnf0", "vnf1"]);
    assert_eq!(w.pairs, vec![(0, 2), (3, 1)]);
    assert_eq!(w.vnf_ports.len(), 2);
    assert!(w.gen_netns.is_none());
    assert_eq!(w.dut_server_sockets().len(), 2);
    assert_eq!(w.gen_server_sockets().len(), 2);
}

#[test]
fn a_panicking_test_still_removes_processes_and_namespaces() {
    use vecswitch_testbed::dut::testpmd::TestpmdDut;
    let seen = std::sync::Mutex::new(None);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut tb = Testbed::build(Topology::Phy2Phy { link: Link::Memif }).unwrap();
        let _ports = tb.open_generator_ports().unwrap();
        tb.start(Box::new(TestpmdDut::new())).unwrap();
        let pl = tb.placement(vecswitch_testbed::generator_placement());
        let pid = pl.processes.iter().find(|p| p.role == "dut").unwrap().pid;
        *seen.lock().unwrap() = Some((
            pid,
            tb.wiring().dut_netns.clone(),
            tb.wiring().run_dir.clone(),
        ));
        panic!("simulated test failure");
    }));
    assert!(r.is_err());
    let (pid, ns, run_dir) = seen.lock().unwrap().clone().unwrap();
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "testpmd {pid} survived"
    );
    assert!(!netns_list().contains(&ns));
    // The run directory is kept for its logs (panicking), and a later cleanup_stale of a dead run
    // would remove it; this one belongs to a live process, so remove it here.
    assert!(run_dir.join("dut-testpmd.log").exists());
    std::fs::remove_dir_all(&run_dir).unwrap();
}
