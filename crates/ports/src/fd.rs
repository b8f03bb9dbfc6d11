//! Small helpers on the sockets the kernel-interface ports own.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

/// Waits up to `timeout` until `fd` is readable (`poll(POLLIN)`); for interrupt or adaptive mode,
/// where a worker sleeps instead of spinning on an idle port. An interrupted wait is `Ok(false)`.
pub(crate) fn wait_readable(fd: RawFd, timeout: Duration) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(rc > 0 && pfd.revents & libc::POLLIN != 0)
}
