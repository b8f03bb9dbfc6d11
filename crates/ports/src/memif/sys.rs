//! The operating-system side of memif, and the only `unsafe` in it: SOCK_SEQPACKET Unix sockets
//! ([`SockAddr`], [`listen`], [`connect`], [`accept`]), messages with a file descriptor attached
//! ([`send_msg`], [`recv_msg`], SCM_RIGHTS), [`memfd`] and [`eventfd`], and [`Region`], a memory
//! file mapped as a [`ShmRegion`] (crates/ports/src/shm.rs holds the mapping's unsafe).
//!
//! Everything is non-blocking and close-on-exec; every descriptor is an [`OwnedFd`], so nothing
//! leaks when a connection is torn down.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::shm::ShmRegion;

/// A control-socket address: a filesystem path, or an abstract name (written `@name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SockAddr {
    Path(String),
    Abstract(String),
}

/// Longest `sun_path` content (108 bytes with the NUL of a path, or the leading NUL of a name).
pub const MAX_SOCKET_PATH: usize = 107;

impl SockAddr {
    /// `@name` is abstract, anything else a filesystem path.
    pub fn parse(s: &str) -> SockAddr {
        match s.strip_prefix('@') {
            Some(name) => SockAddr::Abstract(name.to_string()),
            None => SockAddr::Path(s.to_string()),
        }
    }

    fn to_raw(&self) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
        // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
        let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let base = std::mem::size_of::<libc::sa_family_t>();
        let (bytes, start) = match self {
            SockAddr::Path(p) => (p.as_bytes(), 0),
            // Abstract: a leading NUL, the name, and no trailing NUL; the length says where it ends
            // (as DPDK's `socket-abstract=yes` and VPP's `abstract:` sockets do).
            SockAddr::Abstract(n) => (n.as_bytes(), 1),
        };
        if bytes.is_empty() || bytes.len() + start > MAX_SOCKET_PATH || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "bad socket address",
            ));
        }
        for (i, &c) in bytes.iter().enumerate() {
            sun.sun_path[start + i] = c as libc::c_char;
        }
        let len = match self {
            SockAddr::Path(_) => std::mem::size_of::<libc::sockaddr_un>(),
            SockAddr::Abstract(_) => base + 1 + bytes.len(),
        };
        Ok((sun, len as libc::socklen_t))
    }
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn seqpacket() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned descriptor is owned by us alone.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: fd was just returned by socket() and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Connects a non-blocking SOCK_SEQPACKET socket to `addr`.
pub fn connect(addr: &SockAddr) -> io::Result<OwnedFd> {
    let fd = seqpacket()?;
    let (sun, len) = addr.to_raw()?;
    // SAFETY: sun is a valid sockaddr_un of `len` meaningful bytes; fd is a live socket.
    cvt(unsafe {
        libc::connect(
            fd.as_raw_fd(),
            &sun as *const _ as *const libc::sockaddr,
            len,
        )
    })?;
    Ok(fd)
}

/// Binds and listens on `addr`. A stale socket file nobody listens on is replaced; a live one is an
/// `AddrInUse` error.
pub fn listen(addr: &SockAddr) -> io::Result<OwnedFd> {
    if let SockAddr::Path(p) = addr {
        if let Ok(meta) = std::fs::symlink_metadata(p) {
            use std::os::unix::fs::FileTypeExt;
            if meta.file_type().is_socket() {
                match connect(addr) {
                    Ok(_) => {
                        return Err(io::Error::new(
                            io::ErrorKind::AddrInUse,
                            format!("{p} is served by another process"),
                        ))
                    }
                    Err(_) => std::fs::remove_file(p)?,
                }
            }
        }
    }
    let fd = seqpacket()?;
    let (sun, len) = addr.to_raw()?;
    // SAFETY: sun is a valid sockaddr_un of `len` meaningful bytes; fd is a live socket.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sun as *const _ as *const libc::sockaddr,
            len,
        )
    })?;
    // SAFETY: fd is a bound socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 16) })?;
    Ok(fd)
}

/// Accepts one pending connection, `None` if there is none.
pub fn accept(listener: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    // SAFETY: null address pointers are allowed by accept4; the new fd is ours alone.
    let r = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ECONNABORTED) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: r is a descriptor just returned by accept4.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(r) }))
}

/// Sends one record, with `fd` attached as SCM_RIGHTS when given.
pub fn send_msg(sock: BorrowedFd<'_>, bytes: &[u8], fd: Option<BorrowedFd<'_>>) -> io::Result<()> {
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // u64 storage keeps the control buffer aligned for cmsghdr.
    let mut ctl = [0u64; 4];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
        debug_assert!(space <= std::mem::size_of_val(&ctl));
        mh.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
        mh.msg_controllen = space as _;
        // SAFETY: msg_control points at `space` writable, aligned bytes, enough for one cmsghdr
        // carrying one int; CMSG_FIRSTHDR is therefore non-null and CMSG_DATA in bounds.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&mh);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd.as_raw_fd());
        }
    }
    // SAFETY: mh points at a live iovec over `bytes` and at a valid control buffer (or none).
    let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &mh, libc::MSG_NOSIGNAL) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if r as usize != bytes.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "short control message send",
        ));
    }
    Ok(())
}

/// What [`recv_msg`] got.
#[derive(Debug)]
pub enum Recv {
    /// A record of `len` bytes (compare with the expected size: a longer one was cut, `truncated`),
    /// with the first descriptor that came with it (extra descriptors are closed).
    Msg {
        len: usize,
        truncated: bool,
        fd: Option<OwnedFd>,
    },
    /// Nothing to read now.
    WouldBlock,
    /// The peer closed the connection.
    Closed,
}

/// Receives one record into `buf` without blocking.
pub fn recv_msg(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<Recv> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // Room for a few descriptors and credentials; u64 storage keeps it aligned.
    let mut ctl = [0u64; 16];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut mh: libc::msghdr = unsafe { std::mem::zeroed() };
    mh.msg_iov = &mut iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.as_mut_ptr() as *mut libc::c_void;
    mh.msg_controllen = std::mem::size_of_val(&ctl) as _;
    // SAFETY: mh points at a live iovec over `buf` and a writable control buffer of the given size.
    let r = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut mh, libc::MSG_CMSG_CLOEXEC) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(Recv::WouldBlock),
            Some(libc::ECONNRESET) => Ok(Recv::Closed),
            _ => Err(e),
        };
    }
    let mut first: Option<OwnedFd> = None;
    // SAFETY: the kernel filled mh.msg_control/msg_controllen; CMSG_FIRSTHDR/CMSG_NXTHDR walk only
    // inside it and return null at its end. Each SCM_RIGHTS payload holds whole ints, which are
    // descriptors now installed in this process and owned by nobody else.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&mh);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c) as *const RawFd;
                let hdr = libc::CMSG_LEN(0) as usize;
                let n = ((*c).cmsg_len as usize).saturating_sub(hdr) / std::mem::size_of::<RawFd>();
                for i in 0..n {
                    let fd = OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i)));
                    if first.is_none() {
                        first = Some(fd);
                    } // else: dropped, i.e. closed
                }
            }
            c = libc::CMSG_NXTHDR(&mh, c);
        }
    }
    if r == 0 && first.is_none() {
        return Ok(Recv::Closed);
    }
    Ok(Recv::Msg {
        len: r as usize,
        truncated: mh.msg_flags & libc::MSG_TRUNC != 0,
        fd: first,
    })
}

/// A sealed (no shrinking) anonymous shared-memory file of `size` bytes.
pub fn memfd(name: &str, size: u64) -> io::Result<OwnedFd> {
    let cname = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: cname is a valid C string; the returned descriptor is ours alone.
    let fd = cvt(unsafe {
        libc::memfd_create(cname.as_ptr(), libc::MFD_ALLOW_SEALING | libc::MFD_CLOEXEC)
    })?;
    // SAFETY: fd was just returned by memfd_create.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fcntl/ftruncate on a descriptor we own.
    cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), size as libc::off_t) })?;
    // The peer maps this file: forbid shrinking it under the mapping (a read past a file's end is
    // SIGBUS, not a bounds error).
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) })?;
    Ok(fd)
}

/// The size of the file behind `fd`, and whether it is sealed against shrinking.
pub fn file_size_and_shrink_seal(fd: BorrowedFd<'_>) -> io::Result<(u64, bool)> {
    // SAFETY: stat is plain old data; fstat fills it for a valid fd.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fd is valid for the duration of the call; st is writable.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    // SAFETY: F_GET_SEALS takes no argument; it fails with EINVAL on files without sealing.
    let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
    Ok((
        st.st_size.max(0) as u64,
        seals >= 0 && seals & libc::F_SEAL_SHRINK != 0,
    ))
}

/// A non-blocking eventfd.
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: plain syscall; the returned descriptor is ours alone.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: fd was just returned by eventfd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Adds 1 to an eventfd (wakes a sleeping reader). Errors (counter full) are ignored: the reader is
/// awake already then.
pub fn eventfd_kick(fd: BorrowedFd<'_>) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a live u64.
    let _ = unsafe { libc::write(fd.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
}

/// Reads (and so resets) an eventfd's counter without blocking; returns it (0 if nothing pending).
pub fn eventfd_drain(fd: BorrowedFd<'_>) -> u64 {
    let mut v: u64 = 0;
    // SAFETY: reads at most 8 bytes into a live u64; the fd is non-blocking.
    let r = unsafe { libc::read(fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    if r == 8 {
        v
    } else {
        0
    }
}

/// A memif region: the peer's (or our own) memory file mapped as a [`ShmRegion`], which unmaps it
/// on drop, and the file, closed after it.
///
/// The bytes may be written at any time by another process, so this type never hands out `&[u8]`:
/// every access goes through the region's bounds-checked volatile/atomic accessors
/// ([`Region::shm`], used by `ring.rs`).
#[derive(Debug)]
pub struct Region {
    // Field order is drop order: unmap, then close the file.
    shm: ShmRegion,
    fd: Option<OwnedFd>,
}

impl Region {
    /// Maps `len` bytes of `fd` shared, read-write. Fails if the file is shorter than `len`
    /// (touching a mapping past the end of its file would raise SIGBUS).
    pub fn map(fd: OwnedFd, len: u64) -> io::Result<Region> {
        let (size, sealed) = file_size_and_shrink_seal(fd.as_fd())?;
        if !sealed {
            // A peer that shrinks the file under our mapping would turn our reads into SIGBUS.
            // DPDK and VPP seal their memfds; seal one that is not (possible when the peer created
            // it with MFD_ALLOW_SEALING). Files that cannot be sealed (e.g. hugetlbfs) are still
            // accepted, as DPDK does: the peer is trusted not to truncate them.
            // SAFETY: fcntl on a descriptor we own; failure is harmless and reported below.
            let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK) };
            if r < 0 {
                tracing::warn!("memif: peer region cannot be sealed against shrinking");
            }
        }
        if len == 0 || len > size || len > isize::MAX as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("region size {len} does not fit the shared file of {size} bytes"),
            ));
        }
        let shm = ShmRegion::map(fd.as_raw_fd(), len as usize)?;
        Ok(Region { shm, fd: Some(fd) })
    }

    /// Maps `len` bytes of `fd`, a memory file this process just created ([`memfd`]), faulting it
    /// in page by page ([`ShmRegion::map_fresh`]).
    pub fn map_fresh(fd: OwnedFd, len: u64) -> io::Result<Region> {
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l > 0 && l <= isize::MAX as usize)
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("region size {len}"))
            })?;
        let shm = ShmRegion::map_fresh(fd.as_raw_fd(), len)?;
        Ok(Region { shm, fd: Some(fd) })
    }

    /// Anonymous zeroed memory of `len` bytes (at least 1), for tests and fuzzing of ring handling.
    pub fn anonymous(len: usize) -> io::Result<Region> {
        Ok(Region {
            shm: ShmRegion::anonymous(len)?,
            fd: None,
        })
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.shm.len()
    }

    /// Whether the mapping is empty (never, for a mapped region).
    pub fn is_empty(&self) -> bool {
        self.shm.is_empty()
    }

    /// The memory file, for passing it to the peer.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(|f| f.as_fd())
    }

    /// The mapping, reached only through its bounds-checked accessors.
    pub fn shm(&self) -> &ShmRegion {
        &self.shm
    }
}

/// Moves the calling thread off the CPUs it inherited and down to ordinary priority: a thread a
/// real-time worker spawns inherits its SCHED_FIFO priority and its one CPU, and would then either
/// wait for the worker to sleep or, once running, hold the worker off the CPU until it finishes.
/// The thread runs on every online CPU but the inherited ones (all of them when it inherited every
/// CPU, or none would be left). Best effort: a refusal leaves the thread as it was.
pub fn leave_worker_cpu() {
    // SAFETY: a zeroed `sched_param` is valid; pid 0 is the calling thread.
    unsafe {
        let p: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
    }
    // SAFETY: `cpu_set_t` is plain bits, valid zeroed; the calls get its true size and pid 0.
    unsafe {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let mut inherited: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, size, &mut inherited) != 0 {
            return;
        }
        let online = libc::sysconf(libc::_SC_NPROCESSORS_ONLN).clamp(1, libc::CPU_SETSIZE as i64);
        let mut others: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..online as usize {
            if !libc::CPU_ISSET(cpu, &inherited) {
                libc::CPU_SET(cpu, &mut others);
            }
        }
        if libc::CPU_COUNT(&others) > 0 {
            libc::sched_setaffinity(0, size, &others);
        }
    }
}
