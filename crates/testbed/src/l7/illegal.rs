//! Illegal flows (seed 004: "a small amount of 'illegal' traffic … that would be blocked,
//! according to the firewall's rule set"), sent during an L7 run beside the mix.
//!
//! Three kinds, in turn ([`IllegalKind`]), each one TCP connection attempt with a short timeout
//! ([`ILLEGAL_TIMEOUT`]) to a port that *listens* — so an attempt that connects is a flow the
//! device let through, never a missing server:
//!
//! - **from outside**: the server's namespace connects to the client (port [`INSIDE_PORT`], a
//!   listener in the client's namespace): seed 004's "connection attempts from the outside";
//! - **denied port**: the client connects to the server's TCP [`crate::chain::policy::DENIED_PORT`]
//!   (telnet; a listener in the server's namespace), a port the policy does not open;
//! - **denied range**: the client fetches from the server's extra address in the denied range
//!   ([`crate::chain::routed::denied_target`], nginx listens on every address).
//!
//! An attempt that connected is counted `passed` (an error of the run); one refused (RST, ICMP
//! unreachable) or timed out is `denied`. The device side — the firewall VNFs' drop counters —
//! is read by the bed ([`super::L7Bed::run`]) before and after the run.

use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::netns::Netns;

/// The client's listening port that nobody outside may reach.
pub const INSIDE_PORT: u16 = 8022;
/// How long an illegal attempt waits for its connection.
pub const ILLEGAL_TIMEOUT: Duration = Duration::from_secs(2);

/// One kind of illegal flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IllegalKind {
    FromOutside,
    DeniedPort,
    DeniedRange,
}

impl IllegalKind {
    pub const ALL: [IllegalKind; 3] = [
        IllegalKind::FromOutside,
        IllegalKind::DeniedPort,
        IllegalKind::DeniedRange,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IllegalKind::FromOutside => "from-outside",
            IllegalKind::DeniedPort => "denied-port",
            IllegalKind::DeniedRange => "denied-range",
        }
    }
}

/// The addresses an illegal run needs, of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Targets {
    pub client: IpAddr,
    pub server: IpAddr,
    /// The server's address in the denied range.
    pub denied: IpAddr,
}

impl Targets {
    /// Where attempt `kind` connects to, and whether it starts in the server's namespace.
    fn of(&self, kind: IllegalKind) -> (SocketAddr, bool) {
        match kind {
            IllegalKind::FromOutside => (SocketAddr::new(self.client, INSIDE_PORT), true),
            IllegalKind::DeniedPort => (
                SocketAddr::new(self.server, crate::chain::policy::DENIED_PORT),
                false,
            ),
            IllegalKind::DeniedRange => (SocketAddr::new(self.denied, 80), false),
        }
    }
}

/// Per kind: attempts, how many were denied (refused or timed out) and how many got through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IllegalKindReport {
    pub kind: IllegalKind,
    pub sent: u64,
    pub refused: u64,
    pub timed_out: u64,
    pub passed: u64,
}

/// The illegal flows of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IllegalReport {
    pub sent: u64,
    /// Refused or timed out: what the firewall should do.
    pub denied: u64,
    /// Connected: the device let an illegal flow through (an error of the run).
    pub passed: u64,
    pub kinds: Vec<IllegalKindReport>,
    /// Connections the illegal listeners accepted (client's and server's telnet; the denied
    /// range's nginx is not counted here): the receiving side's view of `passed`.
    pub listener_accepts: u64,
    /// Packets the firewall VNFs of the chain dropped during the run (rule and default denies;
    /// the kernel's nftables counters); `None` without a firewall VNF. At least one per denied
    /// attempt (a SYN; retransmissions add more).
    pub device_drops: Option<u64>,
    /// The first few flows that got through, described.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Listeners for the attempts that must not connect, accepting (and closing) in threads of
/// their own until dropped.
#[derive(Debug)]
pub struct Listeners {
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Listeners {
    /// Binds `client`'s [`INSIDE_PORT`] in `client_ns` and `server`'s DENIED_PORT in
    /// `server_ns` (each address given, both families).
    pub fn start(
        client_ns: &Netns,
        client: &[IpAddr],
        server_ns: &Netns,
        server: &[IpAddr],
    ) -> Result<Listeners> {
        let mut l = Listeners {
            stop: Arc::new(AtomicBool::new(false)),
            accepted: Arc::new(AtomicU64::new(0)),
            threads: Vec::new(),
        };
        let sets = [
            (client_ns, client, INSIDE_PORT),
            (server_ns, server, crate::chain::policy::DENIED_PORT),
        ];
        for (ns, addrs, port) in sets {
            let addrs: Vec<SocketAddr> = addrs.iter().map(|a| SocketAddr::new(*a, port)).collect();
            let bound = ns.run_in(move || {
                addrs
                    .into_iter()
                    .map(|a| TcpListener::bind(a).map_err(|e| (a, e)))
                    .collect::<Vec<_>>()
            })?;
            for b in bound {
                let listener = b.map_err(|(a, e)| Error::Invalid {
                    field: "l7 illegal-flow listener",
                    value: format!("{a} in {}: {e}", ns.name()),
                    expected: "a free port on the endpoint's address".into(),
                })?;
                listener.set_nonblocking(true).map_err(|e| Error::Invalid {
                    field: "l7 illegal-flow listener",
                    value: e.to_string(),
                    expected: "a socket that can be non-blocking".into(),
                })?;
                let (stop, accepted) = (Arc::clone(&l.stop), Arc::clone(&l.accepted));
                l.threads.push(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok(_) => {
                                accepted.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(20)),
                        }
                    }
                }));
            }
        }
        Ok(l)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Listeners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The outcome of one attempt.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub kind: IllegalKind,
    pub to: SocketAddr,
    /// `Ok(())` if it connected; else why not.
    pub result: std::result::Result<(), ErrorKind>,
    pub detail: String,
}

fn attempt(kind: IllegalKind, to: SocketAddr, timeout: Duration) -> Attempt {
    let (result, detail) = match TcpStream::connect_timeout(&to, timeout) {
        Ok(s) => (Ok(()), format!("connected from {:?}", s.local_addr().ok())),
        Err(e) => (Err(e.kind()), e.to_string()),
    };
    Attempt {
        kind,
        to,
        result,
        detail,
    }
}

/// `n` attempts spread evenly over `duration` from `t0`, kinds in turn; the ones of the client
/// side start in `client_ns`, the others in `server_ns`. Returns the running launchers: join
/// them for the outcomes.
pub fn launch(
    n: usize,
    t0: Instant,
    duration: Duration,
    targets: Targets,
    client_ns: &Netns,
    server_ns: &Netns,
) -> Result<Vec<JoinHandle<Vec<Attempt>>>> {
    let timeout = ILLEGAL_TIMEOUT;
    let mut plan: [Vec<(IllegalKind, SocketAddr, Instant)>; 2] = [Vec::new(), Vec::new()];
    for i in 0..n {
        let kind = IllegalKind::ALL[i % IllegalKind::ALL.len()];
        let (to, outside) = targets.of(kind);
        let at = t0 + duration.mul_f64((i as f64 + 0.5) / n as f64);
        plan[usize::from(outside)].push((kind, to, at));
    }
    let mut out = Vec::new();
    for (ns, jobs) in [client_ns, server_ns].into_iter().zip(plan) {
        if jobs.is_empty() {
            continue;
        }
        // The launcher and the threads it spawns are in `ns` (threads inherit the namespace).
        let h = ns.run_in(move || {
            std::thread::spawn(move || {
                let mut running = Vec::new();
                for (kind, to, at) in jobs {
                    let now = Instant::now();
                    if at > now {
                        std::thread::sleep(at - now);
                    }
                    running.push(std::thread::spawn(move || attempt(kind, to, timeout)));
                }
                running
                    .into_iter()
                    .filter_map(|h| h.join().ok())
                    .collect::<Vec<Attempt>>()
            })
        })?;
        out.push(h);
    }
    Ok(out)
}

/// Counts `attempts` into a report (`device_drops` and `listener_accepts` filled by the caller).
pub fn summarize(attempts: &[Attempt]) -> IllegalReport {
    let mut kinds = Vec::new();
    let mut errors = Vec::new();
    for kind in IllegalKind::ALL {
        let mine: Vec<&Attempt> = attempts.iter().filter(|a| a.kind == kind).collect();
        if mine.is_empty() {
            continue;
        }
        let mut k = IllegalKindReport {
            kind,
            sent: mine.len() as u64,
            refused: 0,
            timed_out: 0,
            passed: 0,
        };
        for a in mine {
            match a.result {
                Ok(()) => {
                    k.passed += 1;
                    if errors.len() < 5 {
                        errors.push(format!(
                            "{} to {}: got through ({})",
                            kind.name(),
                            a.to,
                            a.detail
                        ));
                    }
                }
                Err(ErrorKind::TimedOut | ErrorKind::WouldBlock) => k.timed_out += 1,
                // Refused (RST) or an ICMP error (unreachable, prohibited): denied.
                Err(_) => k.refused += 1,
            }
        }
        kinds.push(k);
    }
    let sent = kinds.iter().map(|k| k.sent).sum();
    let passed = kinds.iter().map(|k| k.passed).sum();
    IllegalReport {
        sent,
        denied: sent - passed,
        passed,
        kinds,
        listener_accepts: 0,
        device_drops: None,
        errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_counted_by_outcome_and_kind() {
        let a = |kind, r| Attempt {
            kind,
            to: "10.0.0.1:23".parse().unwrap(),
            result: r,
            detail: "x".into(),
        };
        let r = summarize(&[
            a(IllegalKind::FromOutside, Err(ErrorKind::TimedOut)),
            a(IllegalKind::FromOutside, Err(ErrorKind::ConnectionRefused)),
            a(IllegalKind::DeniedPort, Ok(())),
            a(IllegalKind::DeniedRange, Err(ErrorKind::HostUnreachable)),
        ]);
        assert_eq!((r.sent, r.denied, r.passed), (4, 3, 1));
        assert_eq!(r.kinds.len(), 3);
        assert_eq!((r.kinds[0].timed_out, r.kinds[0].refused), (1, 1));
        assert_eq!(r.kinds[1].passed, 1);
        assert_eq!(r.kinds[2].refused, 1);
        assert_eq!(r.errors.len(), 1);
        assert!(r.errors[0].contains("denied-port"), "{:?}", r.errors);
    }

    #[test]
    fn targets_put_the_outside_attempt_in_the_server_namespace() {
        let t = Targets {
            client: "10.12.1.1".parse().unwrap(),
            server: "10.12.3.1".parse().unwrap(),
            denied: "10.12.3.170".parse().unwrap(),
        };
        assert_eq!(
            t.of(IllegalKind::FromOutside),
            ("10.12.1.1:8022".parse().unwrap(), true)
        );
        assert_eq!(
            t.of(IllegalKind::DeniedPort),
            ("10.12.3.1:23".parse().unwrap(), false)
        );
        assert_eq!(t.of(IllegalKind::DeniedRange).0.port(), 80);
    }
}
