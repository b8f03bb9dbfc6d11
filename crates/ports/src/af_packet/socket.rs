//! Socket calls: options, interface ioctls.

use std::io;
use std::os::fd::RawFd;

use super::config::AfPacketConfig;
use super::sys;
use super::AfPacketError;

pub(super) fn os_err(port: &AfPacketConfig, step: &'static str) -> AfPacketError {
    AfPacketError::Syscall {
        port: port.name.clone(),
        interface: port.interface.clone(),
        step,
        source: io::Error::last_os_error(),
    }
}

pub(super) fn setsockopt<T>(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` is a live, initialised `T` and the length passed is exactly its size; the
    // kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            core::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `ioctl(SIOCGIF*)` on `interface` through socket `fd`, returning the first 4 bytes of the union
/// as i32.
pub(super) fn ifreq(fd: RawFd, interface: &str, request: libc::c_ulong) -> Option<i32> {
    let mut req = sys::IfReq {
        name: [0; 16],
        data: [0; 24],
    };
    for (d, s) in req.name.iter_mut().zip(interface.bytes().take(15)) {
        *d = s as libc::c_char;
    }
    // SAFETY: `req` is a properly sized `struct ifreq` with a NUL-terminated name (at most 15
    // bytes copied into 16); the kernel writes within it.
    let rc = unsafe { libc::ioctl(fd, request as _, &mut req as *mut sys::IfReq) };
    (rc == 0).then(|| i32::from_ne_bytes(req.data[..4].try_into().expect("4 bytes")))
}
