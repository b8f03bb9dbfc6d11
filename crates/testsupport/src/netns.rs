//! Network namespaces and veth pairs for tests that need root: unique names (pid and a
//! per-process counter, within the kernel's 15-character interface names), IPv6 off so that no
//! router solicitation or MLD report shows up in exact frame counts, and `Drop` guards that
//! delete what was created even when the test panics. A guard is built before the command that
//! creates the object runs, so a half-built lab is cleaned up too.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::tool::{ip, run};

/// The kernel's limit on an interface name (IFNAMSIZ − 1).
pub const IFNAME_MAX: usize = 15;

/// `prefix` followed by this process's pid (mod 100,000) and a per-process counter: unique among
/// concurrent test processes and among the tests of one process. Panics if the result would not
/// fit an interface name (keep prefixes to 6 characters or fewer).
pub fn unique_name(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "{prefix}{}x{}",
        std::process::id() % 100_000,
        N.fetch_add(1, Ordering::Relaxed)
    );
    assert!(
        name.len() <= IFNAME_MAX,
        "test interface name {name:?} is {} characters; the kernel accepts at most {IFNAME_MAX} \
         (use a shorter prefix than {prefix:?})",
        name.len()
    );
    name
}

/// A network namespace, deleted on drop (with every interface in it, and so their veth peers).
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates namespace `unique_name(prefix)` with IPv6 off for every interface that enters it.
    pub fn new(prefix: &str) -> Netns {
        Netns::named(&unique_name(prefix))
    }

    /// Creates namespace `name` (the caller made it unique), IPv6 off.
    pub fn named(name: &str) -> Netns {
        ip(&["netns", "add", name]);
        let ns = Netns {
            name: name.to_string(),
        };
        for key in ["all", "default"] {
            ns.exec(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{key}.disable_ipv6=1"),
            ]);
        }
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/run/netns/<name>`, as `setns`-based openers (`open_in_netns`) take it.
    pub fn path(&self) -> String {
        format!("/run/netns/{}", self.name)
    }

    /// `ip -n <ns> args`; panics with the error.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// `ip netns exec <ns> args…`: stdout, or the error naming the command.
    pub fn try_exec(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["netns", "exec", &self.name];
        all.extend_from_slice(args);
        run("ip", &all)
    }

    /// [`Netns::try_exec`], panicking with the error.
    pub fn exec(&self, args: &[&str]) -> String {
        self.try_exec(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The kernel's counter `/sys/class/net/<ifname>/statistics/<counter>` inside the namespace.
    pub fn counter(&self, ifname: &str, counter: &str) -> u64 {
        let path = format!("/sys/class/net/{ifname}/statistics/{counter}");
        let text = self.exec(&["cat", &path]);
        text.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{path} in {}: {text:?}: {e}", self.name))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "del", &self.name]);
    }
}

/// A veth pair, ends `a` and `b`, each in the test's namespace or in a [`Netns`]; IPv6 off on both,
/// both up. Dropping it deletes the pair (a no-op when a deleted namespace already took it).
#[derive(Debug)]
pub struct Veth {
    a: String,
    a_ns: Option<String>,
    b: String,
}

impl Veth {
    /// Both ends in the test's own namespace.
    pub fn new(a: &str, b: &str) -> Veth {
        Veth::create(a, None, b, None, None)
    }

    /// `a` here, `b` in `ns`.
    pub fn to_ns(a: &str, b: &str, ns: &Netns) -> Veth {
        Veth::create(a, None, b, Some(ns), None)
    }

    /// The general form: each end in the test's namespace (`None`) or in a namespace, and an
    /// MTU for both ends.
    pub fn create(
        a: &str,
        a_ns: Option<&Netns>,
        b: &str,
        b_ns: Option<&Netns>,
        mtu: Option<u32>,
    ) -> Veth {
        for end in [a, b] {
            assert!(
                end.len() <= IFNAME_MAX,
                "veth end {end:?} is longer than {IFNAME_MAX} characters"
            );
        }
        let mtu = mtu.map(|m| m.to_string());
        let mut args = vec!["link", "add", a];
        let mut tail: Vec<&str> = Vec::new();
        if let Some(ns) = a_ns {
            tail.extend(["netns", ns.name()]);
        }
        if let Some(m) = &mtu {
            tail.extend(["mtu", m]);
        }
        tail.extend(["type", "veth", "peer", "name", b]);
        if let Some(ns) = b_ns {
            tail.extend(["netns", ns.name()]);
        }
        if let Some(m) = &mtu {
            tail.extend(["mtu", m]);
        }
        args.extend(tail);
        // The guard first: Drop deletes whatever part of the lab got built.
        let veth = Veth {
            a: a.to_string(),
            a_ns: a_ns.map(|n| n.name().to_string()),
            b: b.to_string(),
        };
        ip(&args);
        for (end, ns) in [(a, a_ns), (b, b_ns)] {
            match ns {
                // A namespace made by Netns has IPv6 off by default; say so again per device.
                Some(ns) => {
                    let _ = ns.try_exec(&[
                        "sysctl",
                        "-qw",
                        &format!("net.ipv6.conf.{end}.disable_ipv6=1"),
                    ]);
                    ns.ip(&["link", "set", end, "up"]);
                }
                None => {
                    let _ =
                        std::fs::write(format!("/proc/sys/net/ipv6/conf/{end}/disable_ipv6"), "1");
                    ip(&["link", "set", end, "up"]);
                }
            }
        }
        veth
    }

    pub fn a(&self) -> &str {
        &self.a
    }

    pub fn b(&self) -> &str {
        &self.b
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = match &self.a_ns {
            Some(ns) => run("ip", &["-n", ns, "link", "del", &self.a]),
            None => run("ip", &["link", "del", &self.a]),
        };
    }
}

/// The most common lab: a namespace holding veth end `peer`, whose other end `host` stays in the
/// test's namespace; both up, IPv6 off. Drop deletes the pair, then the namespace.
#[derive(Debug)]
pub struct VethLab {
    // Field order is drop order: the pair first, then the namespace.
    veth: Veth,
    ns: Netns,
}

impl VethLab {
    /// Namespace, host end and peer end named from `prefix` (at most 5 characters).
    pub fn new(prefix: &str) -> VethLab {
        VethLab::with_mtu(prefix, None)
    }

    pub fn with_mtu(prefix: &str, mtu: Option<u32>) -> VethLab {
        let ns = Netns::new(&format!("{prefix}n"));
        let base = unique_name(prefix);
        let (host, peer) = (format!("{base}h"), format!("{base}p"));
        let veth = Veth::create(&host, None, &peer, Some(&ns), mtu);
        VethLab { veth, ns }
    }

    pub fn ns(&self) -> &Netns {
        &self.ns
    }

    /// `/run/netns/<ns>`.
    pub fn netns_path(&self) -> String {
        self.ns.path()
    }

    /// The end in the test's namespace.
    pub fn host(&self) -> &str {
        self.veth.a()
    }

    /// The end inside the namespace.
    pub fn peer(&self) -> &str {
        self.veth.b()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fit_an_interface_name() {
        let (a, b) = (unique_name("vsts"), unique_name("vsts"));
        assert_ne!(a, b);
        assert!(a.len() <= IFNAME_MAX && a.starts_with("vsts"));
        assert!(std::panic::catch_unwind(|| unique_name("much-too-long-prefix")).is_err());
    }
}

#[cfg(test)]
mod root_tests {
    use super::*;

    fn exists_here(ifname: &str) -> bool {
        std::path::Path::new(&format!("/sys/class/net/{ifname}")).exists()
    }

    /// Needs root (as CI runs): the lab exists while the guard lives and is gone after it.
    #[test]
    fn a_veth_lab_is_built_and_deleted_by_its_guard() {
        let lab = VethLab::new("vstl");
        let (host, peer, ns) = (
            lab.host().to_string(),
            lab.peer().to_string(),
            lab.ns().name().to_string(),
        );
        assert!(exists_here(&host));
        assert!(!exists_here(&peer), "the peer end is inside the namespace");
        assert!(
            lab.ns().ip(&["link", "show", &peer]).contains("state UP")
                || lab.ns().ip(&["link", "show", &peer]).contains("LOWER_UP")
        );
        assert_eq!(
            lab.ns()
                .exec(&[
                    "cat",
                    &format!("/proc/sys/net/ipv6/conf/{peer}/disable_ipv6")
                ])
                .trim(),
            "1"
        );
        assert_eq!(lab.ns().counter(&peer, "rx_errors"), 0);
        drop(lab);
        assert!(!exists_here(&host));
        assert!(!run("ip", &["netns", "list"]).unwrap().contains(&ns));
    }
}
