//! Differential test against the Linux kernel's FIB (needs root and iproute2, as CI runs).
//!
//! A namespace of its own (`fibk-<pid>`), an interface `d0` (one end of a veth pair inside it:
//! this kernel has no `dummy` module) with 100.64.0.1/24 (the
//! next-hop subnet); the same random route set (overlapping prefixes, /0, /32; one next hop each,
//! `via 100.64.0.(10 + n)`) goes into the kernel with `ip -batch` and into an [`Ip4Fib`]; then
//! `ip -batch` of `route get` for 100,000 random destinations (half uniform, half on and just
//! beside route boundaries) and the next hop the kernel chose must be ours: 0 disagreements,
//! "Network is unreachable" counting as "no route". Then the /0, the /1 and every third route are
//! removed from both (from the FIB in place) and all destinations compared again. The namespace is deleted by a Drop guard
//! even when an assert fails.
//!
//! One next hop per route: the kernel's multipath hash is not ours, so ECMP choice is tested in
//! `api.rs`, not here. Destinations the kernel answers from its local table or treats specially
//! are not drawn (100.64.0.0/24 itself, 0/8, 127/8, 224/3), and no route lies inside them.

use std::collections::HashMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use vecswitch_fib::Ip4Rib;

struct Netns(String);

impl Netns {
    fn new(name: String) -> Self {
        ip(&["netns", "add", &name]);
        Netns(name)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().unwrap_or_else(|e| {
        panic!(
            "running `ip {}`: {e} (install iproute2: scripts/setup.sh)",
            args.join(" ")
        )
    });
    assert!(
        out.status.success(),
        "`ip {}` failed (needs root): {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run `ip -n NS -force -batch -` with `input`; (stdout, stderr).
fn ip_batch(ns: &str, input: &str) -> (String, String) {
    let mut child = Command::new("ip")
        .args(["-n", ns, "-force", "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ip -batch (install iproute2: scripts/setup.sh)");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

/// Inside a range the kernel treats specially (or our next-hop subnet)?
fn special(a: u32) -> bool {
    let first = a >> 24;
    first == 0 || first == 127 || first >= 224 || a & 0xffff_ff00 == 0x6440_0000
}

const ROUTES: usize = 3000;
const LOOKUPS: usize = 100_000;

#[test]
fn kernel_and_fib_choose_the_same_next_hop() {
    let ns = Netns::new(format!("fibk-{}", std::process::id()));
    // A veth pair stands in for a dummy interface: this kernel has no `dummy` module.
    ip(&[
        "-n", &ns.0, "link", "add", "d0", "type", "veth", "peer", "name", "d1",
    ]);
    ip(&["-n", &ns.0, "link", "set", "d1", "up"]);
    ip(&["-n", &ns.0, "addr", "add", "100.64.0.1/24", "dev", "d0"]);
    ip(&["-n", &ns.0, "link", "set", "d0", "up"]);

    let mut rng = ChaCha8Rng::seed_from_u64(0xf1b);
    let bases: Vec<u32> = (0..20).map(|_| rng.gen()).collect();
    let mut rib = Ip4Rib::new();
    let mut batch = String::new();
    // /0 and a few very short ones, then clusters of overlapping prefixes around the bases.
    let mut routes: Vec<(u32, u8)> = vec![(0, 0), (0x8000_0000, 1), (0x0a00_0000, 8)];
    while routes.len() < ROUTES {
        let base = bases[rng.gen_range(0..bases.len())];
        let len = match rng.gen_range(0..10) {
            0 => 32,
            1 => rng.gen_range(1..=12),
            _ => rng.gen_range(12..=32),
        };
        let a = (base ^ (rng.gen::<u32>() >> rng.gen_range(0..32))) & mask(len);
        if special(a) || (len >= 8 && special(a | !mask(len))) {
            continue;
        }
        routes.push((a, len));
    }
    for &(a, len) in &routes {
        let nh: u32 = rng.gen_range(0..200);
        rib.add(Ipv4Addr::from(a), len, &[nh]).unwrap();
        // `replace`: a duplicate prefix in the list takes the last next hop in both tables.
        batch.push_str(&format!(
            "route replace {}/{len} via 100.64.0.{}\n",
            Ipv4Addr::from(a),
            10 + nh
        ));
    }
    let (_, err) = ip_batch(&ns.0, &batch);
    assert!(err.trim().is_empty(), "ip -batch of routes: {err}");
    let fib = rib.build();
    eprintln!(
        "{} routes ({} distinct prefixes)",
        routes.len(),
        fib.routes()
    );

    // Destinations: half uniform, half on or just beside a route's first/last address.
    let mut dsts = Vec::with_capacity(LOOKUPS);
    while dsts.len() < LOOKUPS {
        let d = if rng.gen() {
            rng.gen::<u32>()
        } else {
            let (a, len) = routes[rng.gen_range(0..routes.len())];
            match rng.gen_range(0..4) {
                0 => a,
                1 => a | !mask(len),
                2 => a.wrapping_sub(1),
                _ => (a | !mask(len)).wrapping_add(1),
            }
        };
        if !special(d) {
            dsts.push(d);
        }
    }
    let (none, unreachable, disagreements) = compare(&ns.0, &fib, &dsts);
    assert!(
        disagreements.is_empty(),
        "full build: first disagreements (dst, ours, kernel): {:?}",
        &disagreements[..disagreements.len().min(10)]
    );
    assert_eq!(none, 0, "a /0 is in the set, every destination has a route");
    assert_eq!(unreachable, 0);

    // Phase 2: remove the /0, the /1 and every third route from both, the FIB in place
    // (incremental), and compare again: now some destinations have no route.
    let mut fib = fib;
    let mut batch = String::new();
    let mut removed = std::collections::HashSet::new();
    for (i, &(a, len)) in routes.iter().enumerate() {
        if (i < 2 || i % 3 == 0) && removed.insert((a, len)) {
            fib.remove(Ipv4Addr::from(a), len).unwrap();
            batch.push_str(&format!("route del {}/{len}\n", Ipv4Addr::from(a)));
        }
    }
    let (_, err) = ip_batch(&ns.0, &batch);
    assert!(err.trim().is_empty(), "ip -batch of route del: {err}");
    let (none, unreachable, disagreements) = compare(&ns.0, &fib, &dsts);
    assert!(
        disagreements.is_empty(),
        "after removals: first disagreements (dst, ours, kernel): {:?}",
        &disagreements[..disagreements.len().min(10)]
    );
    assert!(
        none > 0 && none < dsts.len(),
        "{none} of {} without a route",
        dsts.len()
    );
    assert_eq!(none, unreachable);
}

type Disagreement = (Ipv4Addr, Option<u32>, Option<u32>);

/// `route get` every destination in the kernel and in `fib`: (no route in ours, unreachable in
/// the kernel's, disagreements).
fn compare(
    ns: &str,
    fib: &vecswitch_fib::Ip4Fib,
    dsts: &[u32],
) -> (usize, usize, Vec<Disagreement>) {
    let mut query = String::new();
    for &d in dsts {
        query.push_str(&format!("route get {}\n", Ipv4Addr::from(d)));
    }
    let started = std::time::Instant::now();
    let (out, err) = ip_batch(ns, &query);
    eprintln!(
        "{} `route get` in {:.1} s",
        dsts.len(),
        started.elapsed().as_secs_f64()
    );

    // "A.B.C.D via 100.64.0.X dev d0 ..." per answered destination.
    let mut kernel: HashMap<u32, u32> = HashMap::new();
    for line in out.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()) {
        let dst: Ipv4Addr = line
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let via = line
            .split_whitespace()
            .skip_while(|&x| x != "via")
            .nth(1)
            .unwrap_or_else(|| panic!("no `via` in the kernel's answer: {line}"));
        let gw: Ipv4Addr = via.parse().unwrap();
        kernel.insert(
            u32::from(dst),
            u32::from(gw) - u32::from(Ipv4Addr::new(100, 64, 0, 10)),
        );
    }
    let unreachable = err
        .lines()
        .filter(|l| l.contains("Network is unreachable"))
        .count();
    let other_errors: Vec<&str> = err
        .lines()
        .filter(|l| !l.contains("Network is unreachable") && !l.starts_with("Command failed"))
        .take(5)
        .collect();
    assert!(other_errors.is_empty(), "ip route get: {other_errors:?}");

    let mut disagreements = Vec::new();
    let mut none = 0;
    let mut answers = vec![None; dsts.len()];
    fib.lookup_batch(dsts, &vec![0; dsts.len()], &mut answers);
    for (&d, &ours) in dsts.iter().zip(&answers) {
        let theirs = kernel.get(&d).copied();
        none += usize::from(ours.is_none());
        if ours != theirs {
            disagreements.push((Ipv4Addr::from(d), ours, theirs));
        }
    }
    eprintln!(
        "{} lookups, {} without a route (kernel: {} unreachable), {} disagreements",
        dsts.len(),
        none,
        unreachable,
        disagreements.len()
    );
    (none, unreachable, disagreements)
}
