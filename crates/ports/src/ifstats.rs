//! The kernel's own counters of the interface under an AF_PACKET or AF_XDP port (issue 8 item 5:
//! "every frame the switch loses is counted somewhere, including drops inside the kernel").
//!
//! A frame a port hands to the kernel can still be lost *after* the socket let go of it: on
//! veth, `veth_xmit` puts it straight into the peer's receive queue — the per-CPU backlog
//! (`netif_rx`, `net.core.netdev_max_backlog` frames) when the peer has no NAPI, else the peer's
//! NAPI ring (256 frames, `VETH_RING_SIZE`) — and when that queue is full it frees the frame and
//! counts it in the sending device's `tx_dropped` (drivers/net/veth.c, `veth_xmit`: `NET_RX_DROP`
//! → `priv->dropped`). An AF_XDP socket (copy mode, `xsk_generic_xmit`) saw
//! the frame taken (its descriptor completed, `sendto` returned `EBUSY`), so the port counted it
//! as sent: the only trace is the interface's `tx_dropped` (and, for a backlog drop, the peer's
//! `rx_dropped` and column 2 of `/proc/net/softnet_stat`). An AF_PACKET socket does not lose it:
//! `tpacket_snd` puts the slot back to "send request" and the next kick sends it again, so there
//! the counter counts attempts.
//!
//! A frame lost on its way *into* the port's interface is counted on the other side: veth's
//! peer end counts in its own `tx_dropped` what it could not put into this end's receive queue
//! (in the lab: the generator's end, when the DUT end's NAPI ring of 256 frames was full because
//! its NAPI thread had not run yet — docs/BENCHMARKS.md §5). The reader also follows the
//! interface's link (`IFLA_LINK`, the veth peer's ifindex, with `IFLA_LINK_NETNSID` when the peer
//! is in another namespace) and reads the peer's counters there (`IFLA_TARGET_NETNSID`, kernel ≥
//! 4.20): [`IfKernelStats::peer_tx_dropped`].
//!
//! [`IfStatsReader`] reads `IFLA_STATS64` (`struct rtnl_link_stats64`, include/uapi/linux/if_link.h)
//! of one interface by `RTM_GETLINK` over a `NETLINK_ROUTE` socket (rtnetlink(7)). The socket is
//! opened with the port's, so it lives in the port's network namespace (a netlink socket answers
//! for the namespace it was created in, whatever thread later uses it). Read only when counters
//! are shown (`stats`, `error_counters`, `describe`), never in the fast path.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use serde::Serialize;

/// `NETLINK_ROUTE` (include/uapi/linux/netlink.h).
const NETLINK_ROUTE: libc::c_int = 0;
/// `RTM_NEWLINK`, `RTM_GETLINK` (include/uapi/linux/rtnetlink.h).
const RTM_NEWLINK: u16 = 16;
const RTM_GETLINK: u16 = 18;
/// `NLM_F_REQUEST`, `NLMSG_ERROR`, `NLMSG_DONE` (include/uapi/linux/netlink.h).
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// `IFLA_LINK`, `IFLA_STATS64`, `IFLA_LINK_NETNSID`, `IFLA_TARGET_NETNSID`
/// (include/uapi/linux/if_link.h).
const IFLA_LINK: u16 = 5;
const IFLA_STATS64: u16 = 23;
const IFLA_LINK_NETNSID: u16 = 37;
const IFLA_TARGET_NETNSID: u16 = 46;
/// `sizeof(struct nlmsghdr)`, `sizeof(struct ifinfomsg)`.
const NLMSG_HDR: usize = 16;
const IFINFOMSG: usize = 16;

/// The counters of `struct rtnl_link_stats64` a port shows (of the first eight `__u64`s: rx/tx
/// packets, bytes, errors, dropped), and its link peer's `tx_dropped`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IfKernelStats {
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    /// The link peer's `tx_dropped` (a veth's other end: frames it could not put into this
    /// end's receive queue); 0 for an interface without a peer.
    pub peer_tx_dropped: u64,
}

impl IfKernelStats {
    /// `self − base + carried`, each counter saturating: the counters since `base` (the reading at
    /// the last `clear_stats`) plus those `carried` over from an interface the port had before.
    pub fn since(&self, base: &IfKernelStats, carried: &IfKernelStats) -> IfKernelStats {
        let f = |now: u64, b: u64, c: u64| now.saturating_sub(b) + c;
        IfKernelStats {
            rx_packets: f(self.rx_packets, base.rx_packets, carried.rx_packets),
            tx_packets: f(self.tx_packets, base.tx_packets, carried.tx_packets),
            rx_dropped: f(self.rx_dropped, base.rx_dropped, carried.rx_dropped),
            tx_dropped: f(self.tx_dropped, base.tx_dropped, carried.tx_dropped),
            peer_tx_dropped: f(
                self.peer_tx_dropped,
                base.peer_tx_dropped,
                carried.peer_tx_dropped,
            ),
        }
    }
}

/// A `NETLINK_ROUTE` socket that reads one interface's [`IfKernelStats`].
#[derive(Debug)]
pub(crate) struct IfStatsReader {
    fd: OwnedFd,
    seq: Cell<u32>,
}

impl IfStatsReader {
    /// Opens the socket in the calling thread's network namespace.
    pub(crate) fn open() -> io::Result<IfStatsReader> {
        // SAFETY: plain socket(2) call; the returned descriptor is checked and owned below.
        let raw = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                NETLINK_ROUTE,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // An answer to RTM_GETLINK is queued before send(2) returns; the timeout only bounds a
        // kernel that does not answer at all.
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 200_000,
        };
        // SAFETY: setsockopt with a pointer to a live timeval and its exact size.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(IfStatsReader {
            fd,
            seq: Cell::new(0),
        })
    }

    /// The counters of interface `ifindex` now, with its link peer's `tx_dropped` (0 if it has
    /// no peer or the peer cannot be read).
    pub(crate) fn read(&self, ifindex: u32) -> io::Result<IfKernelStats> {
        let (mut stats, link) = self.get(ifindex, None)?;
        // A peer in another namespace may have the same ifindex as this interface.
        let has_peer =
            |(peer, nsid): &(u32, Option<i32>)| *peer != 0 && (nsid.is_some() || *peer != ifindex);
        if let Some((peer, nsid)) = link.filter(has_peer) {
            if let Ok((p, _)) = self.get(peer, nsid) {
                stats.peer_tx_dropped = p.tx_dropped;
            }
        }
        Ok(stats)
    }

    /// One `RTM_GETLINK` of `ifindex` (in namespace `nsid` as this namespace numbers it, else
    /// here): its counters and its link (peer ifindex, peer's namespace id).
    fn get(&self, ifindex: u32, nsid: Option<i32>) -> io::Result<(IfKernelStats, Link)> {
        let seq = self.seq.get().wrapping_add(1);
        self.seq.set(seq);
        let req = getlink_request(ifindex, seq, nsid);
        // SAFETY: send(2) of a live buffer with its exact length; the kernel only reads it.
        let rc = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = vec![0u8; 32 * 1024];
        // Answers to an earlier request that timed out may still be queued: skip them by seq.
        for _ in 0..8 {
            // SAFETY: recv(2) into a live buffer of `buf.len()` bytes; the kernel writes at most
            // that many.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            match parse_getlink_answer(&buf[..n as usize], seq) {
                Answer::Stats(s, link) => return Ok((s, link)),
                Answer::Error(errno) => return Err(io::Error::from_raw_os_error(errno)),
                Answer::Other => continue,
                Answer::Malformed(what) => return Err(io::Error::other(what)),
            }
        }
        Err(io::Error::other("no RTM_NEWLINK answer for the request"))
    }
}

/// `RTM_GETLINK` for one interface: `nlmsghdr` + `ifinfomsg` with `ifi_index`, and
/// `IFLA_TARGET_NETNSID` when it lives in another namespace.
fn getlink_request(ifindex: u32, seq: u32, nsid: Option<i32>) -> Vec<u8> {
    let len = NLMSG_HDR + IFINFOMSG + if nsid.is_some() { 8 } else { 0 };
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    b[4..6].copy_from_slice(&RTM_GETLINK.to_ne_bytes());
    b[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    b[8..12].copy_from_slice(&seq.to_ne_bytes());
    // nlmsg_pid 0: the kernel. ifinfomsg: family AF_UNSPEC, type 0, index, flags 0, change 0.
    b[NLMSG_HDR + 4..NLMSG_HDR + 8].copy_from_slice(&ifindex.to_ne_bytes());
    if let Some(id) = nsid {
        let at = NLMSG_HDR + IFINFOMSG;
        b[at..at + 2].copy_from_slice(&8u16.to_ne_bytes());
        b[at + 2..at + 4].copy_from_slice(&IFLA_TARGET_NETNSID.to_ne_bytes());
        b[at + 4..at + 8].copy_from_slice(&id.to_ne_bytes());
    }
    b
}

/// An interface's link: the peer's ifindex and, when the peer is in another namespace, that
/// namespace's id as the interface's namespace numbers it.
type Link = Option<(u32, Option<i32>)>;

/// What one netlink datagram said about our request.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Stats(IfKernelStats, Link),
    /// `NLMSG_ERROR` with this (positive) errno.
    Error(i32),
    /// Nothing for request `seq` (an answer to an earlier one).
    Other,
    Malformed(&'static str),
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads the messages of one netlink datagram (bounds-checked throughout: a short or odd answer
/// is [`Answer::Malformed`], never a panic).
fn parse_getlink_answer(buf: &[u8], seq: u32) -> Answer {
    let mut at = 0;
    while at + NLMSG_HDR <= buf.len() {
        let (Some(len), Some(kind), Some(mseq)) =
            (u32_at(buf, at), u16_at(buf, at + 4), u32_at(buf, at + 8))
        else {
            return Answer::Malformed("netlink header cut short");
        };
        let len = len as usize;
        if len < NLMSG_HDR || at + len > buf.len() {
            return Answer::Malformed("netlink message length outside the datagram");
        }
        let msg = &buf[at..at + len];
        if mseq == seq {
            match kind {
                NLMSG_ERROR => {
                    let Some(e) = u32_at(msg, NLMSG_HDR) else {
                        return Answer::Malformed("NLMSG_ERROR without its error");
                    };
                    return Answer::Error((e as i32).saturating_neg());
                }
                RTM_NEWLINK => return link_stats(msg),
                NLMSG_DONE => return Answer::Malformed("NLMSG_DONE before RTM_NEWLINK"),
                _ => {}
            }
        }
        at += (len + 3) & !3;
    }
    Answer::Other
}

/// `IFLA_STATS64`, `IFLA_LINK` and `IFLA_LINK_NETNSID` of one `RTM_NEWLINK` message.
fn link_stats(msg: &[u8]) -> Answer {
    let mut at = NLMSG_HDR + IFINFOMSG;
    let (mut stats, mut link, mut nsid) = (None, None, None);
    while at + 4 <= msg.len() {
        let (Some(len), Some(kind)) = (u16_at(msg, at), u16_at(msg, at + 2)) else {
            return Answer::Malformed("attribute header cut short");
        };
        let len = len as usize;
        if len < 4 || at + len > msg.len() {
            return Answer::Malformed("attribute length outside the message");
        }
        let p = at + 4;
        // NLA_TYPE_MASK: the two top bits are flags.
        match kind & 0x3fff {
            IFLA_STATS64 => {
                // struct rtnl_link_stats64: rx_packets, tx_packets, rx_bytes, tx_bytes,
                // rx_errors, tx_errors, rx_dropped, tx_dropped, ...
                let get = |i: usize| u64_at(msg, p + 8 * i).filter(|_| len >= 4 + 8 * (i + 1));
                stats = match (get(0), get(1), get(6), get(7)) {
                    (Some(rx_packets), Some(tx_packets), Some(rx_dropped), Some(tx_dropped)) => {
                        Some(IfKernelStats {
                            rx_packets,
                            tx_packets,
                            rx_dropped,
                            tx_dropped,
                            peer_tx_dropped: 0,
                        })
                    }
                    _ => {
                        return Answer::Malformed(
                            "IFLA_STATS64 shorter than its first eight counters",
                        )
                    }
                };
            }
            IFLA_LINK if len >= 8 => link = u32_at(msg, p),
            IFLA_LINK_NETNSID if len >= 8 => nsid = u32_at(msg, p).map(|v| v as i32),
            _ => {}
        }
        at += (len + 3) & !3;
    }
    match stats {
        Some(s) => Answer::Stats(s, link.map(|l| (l, nsid))),
        None => Answer::Malformed("RTM_NEWLINK without IFLA_STATS64"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RTM_NEWLINK answer with an IFLA_IFNAME and an IFLA_STATS64 attribute.
    fn answer(seq: u32, stats: [u64; 8]) -> Vec<u8> {
        let mut attrs = Vec::new();
        // IFLA_IFNAME (3) "lo\0", padded to 4.
        attrs.extend_from_slice(&7u16.to_ne_bytes());
        attrs.extend_from_slice(&3u16.to_ne_bytes());
        attrs.extend_from_slice(b"lo\0\0");
        attrs.extend_from_slice(&((4 + 8 * stats.len()) as u16).to_ne_bytes());
        attrs.extend_from_slice(&IFLA_STATS64.to_ne_bytes());
        for s in stats {
            attrs.extend_from_slice(&s.to_ne_bytes());
        }
        let len = NLMSG_HDR + IFINFOMSG + attrs.len();
        let mut m = Vec::new();
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
        m.extend_from_slice(&0u16.to_ne_bytes());
        m.extend_from_slice(&seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[0u8; IFINFOMSG]);
        m.extend_from_slice(&attrs);
        m
    }

    #[test]
    fn stats64_is_read_from_an_answer_and_other_requests_are_skipped() {
        let a = answer(7, [1, 2, 3, 4, 5, 6, 70, 80]);
        assert_eq!(
            parse_getlink_answer(&a, 7),
            Answer::Stats(
                IfKernelStats {
                    rx_packets: 1,
                    tx_packets: 2,
                    rx_dropped: 70,
                    tx_dropped: 80,
                    peer_tx_dropped: 0,
                },
                None
            )
        );
        // With a link to ifindex 9 in namespace id 4.
        let mut l = answer(7, [0; 8]);
        for (kind, v) in [(IFLA_LINK, 9i32), (IFLA_LINK_NETNSID, 4)] {
            l.extend_from_slice(&8u16.to_ne_bytes());
            l.extend_from_slice(&kind.to_ne_bytes());
            l.extend_from_slice(&v.to_ne_bytes());
        }
        let n = l.len() as u32;
        l[0..4].copy_from_slice(&n.to_ne_bytes());
        assert_eq!(
            parse_getlink_answer(&l, 7),
            Answer::Stats(IfKernelStats::default(), Some((9, Some(4))))
        );
        // The request names the namespace only when there is one.
        assert_eq!(getlink_request(9, 1, None).len(), 32);
        let r = getlink_request(9, 1, Some(4));
        assert_eq!(
            (r.len(), u16_at(&r, 34), u32_at(&r, 36)),
            (40, Some(IFLA_TARGET_NETNSID), Some(4))
        );
        assert_eq!(parse_getlink_answer(&a, 8), Answer::Other);
        // An error answer: nlmsghdr, then the negative errno.
        let mut e = Vec::new();
        e.extend_from_slice(&36u32.to_ne_bytes());
        e.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        e.extend_from_slice(&0u16.to_ne_bytes());
        e.extend_from_slice(&9u32.to_ne_bytes());
        e.extend_from_slice(&0u32.to_ne_bytes());
        e.extend_from_slice(&(-libc::ENODEV).to_ne_bytes());
        e.extend_from_slice(&[0u8; 16]);
        assert_eq!(parse_getlink_answer(&e, 9), Answer::Error(libc::ENODEV));
    }

    #[test]
    fn cut_answers_are_malformed_not_a_panic() {
        let a = answer(1, [1, 2, 3, 4, 5, 6, 7, 8]);
        for cut in 0..a.len() {
            let r = parse_getlink_answer(&a[..cut], 1);
            assert!(
                matches!(r, Answer::Malformed(_) | Answer::Other),
                "{cut}: {r:?}"
            );
        }
        let mut long = a.clone();
        long[0..4].copy_from_slice(&10_000u32.to_ne_bytes());
        assert!(matches!(
            parse_getlink_answer(&long, 1),
            Answer::Malformed(_)
        ));
    }

    #[test]
    fn since_subtracts_the_base_and_adds_what_was_carried() {
        let now = IfKernelStats {
            rx_packets: 10,
            tx_packets: 20,
            rx_dropped: 3,
            tx_dropped: 5,
            peer_tx_dropped: 9,
        };
        let base = IfKernelStats {
            rx_packets: 4,
            tx_packets: 30,
            rx_dropped: 1,
            tx_dropped: 2,
            peer_tx_dropped: 9,
        };
        let carried = IfKernelStats {
            tx_dropped: 7,
            ..Default::default()
        };
        assert_eq!(
            now.since(&base, &carried),
            IfKernelStats {
                rx_packets: 6,
                tx_packets: 0,
                rx_dropped: 2,
                tx_dropped: 10,
                peer_tx_dropped: 0,
            }
        );
    }

    #[test]
    fn loopback_is_read_from_the_kernel() {
        // `lo` is ifindex 1 in every namespace; its counters are there (possibly all 0).
        let r = IfStatsReader::open().unwrap();
        r.read(1).unwrap();
        r.read(1).unwrap();
        // No interface 0: the kernel answers with an error, not a hang.
        assert!(r.read(0).is_err() || r.read(u32::MAX - 1).is_err());
    }
}
