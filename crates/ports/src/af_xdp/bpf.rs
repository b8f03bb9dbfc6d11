//! The XDP side of an AF_XDP port, without libbpf, BTF or bpffs (this lab's kernel has none of
//! them): an XSKMAP, a five-instruction program that redirects every frame of a receive queue to
//! the socket in that queue's map slot, and a BPF link that attaches it to the interface.
//!
//! The program, assembled by [`redirect_program`]:
//!
//! ```text
//! r2 = *(u32 *)(r1 + 16)        ; key = ctx->rx_queue_index        (struct xdp_md)
//! r1 = map_fd ll                ; ld_imm64, src = BPF_PSEUDO_MAP_FD: the verifier relocates it
//! r3 = XDP_PASS                 ; what to return when the slot is empty (kernel >= 5.3)
//! call bpf_redirect_map         ; helper 51
//! exit
//! ```
//!
//! It is `return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);`, what libxdp's default
//! program does. The link (`BPF_LINK_CREATE`, kernel >= 5.9) detaches the program when its file
//! descriptor closes, so a port that is dropped, or a process that dies, leaves no program behind.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use super::sys::{self, BpfInsn};

/// The `bpf(2)` system call on an attribute struct `T`; returns the new descriptor or 0.
fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_long> {
    // SAFETY: `attr` is a live, initialised `repr(C)` prefix of `union bpf_attr` and the size
    // passed is exactly its size; the kernel zero-extends shorter attributes, reads within
    // `size`, and writes nothing back for these commands.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            core::mem::size_of::<T>() as libc::c_uint,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn owned(fd: libc::c_long) -> OwnedFd {
    // SAFETY: `fd` is a descriptor the bpf call just created; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as RawFd) }
}

/// A program or map name: up to 15 bytes, NUL-terminated.
fn obj_name(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, b) in n.iter_mut().zip(s.bytes().take(15)) {
        *d = b;
    }
    n
}

/// Creates an XSKMAP of `entries` slots (key: receive queue index, value: socket fd).
pub fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut attr = sys::MapCreateAttr {
        map_type: sys::BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        map_name: obj_name("vecswitch_xsks"),
        ..Default::default()
    };
    bpf(sys::BPF_MAP_CREATE, &mut attr).map(owned)
}

/// Puts socket `xsk` into slot `queue` of XSKMAP `map`.
pub fn xskmap_set(map: RawFd, queue: u32, xsk: RawFd) -> io::Result<()> {
    let key: u32 = queue;
    let value: u32 = xsk as u32;
    let mut attr = sys::MapElemAttr {
        map_fd: map as u32,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        ..Default::default()
    };
    bpf(sys::BPF_MAP_UPDATE_ELEM, &mut attr).map(|_| ())
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> BpfInsn {
    BpfInsn {
        code,
        regs: (src << 4) | (dst & 0x0f),
        off,
        imm,
    }
}

// Opcodes (linux/bpf_common.h, linux/bpf.h).
const BPF_LDX_MEM_W: u8 = 0x01 | 0x60; // BPF_LDX | BPF_MEM | BPF_W
const BPF_LD_IMM_DW: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW
const BPF_ALU64_MOV_K: u8 = 0x07 | 0xb0; // BPF_ALU64 | BPF_MOV | BPF_K
const BPF_JMP_CALL: u8 = 0x05 | 0x80; // BPF_JMP | BPF_CALL
const BPF_JMP_EXIT: u8 = 0x05 | 0x90; // BPF_JMP | BPF_EXIT
/// `offsetof(struct xdp_md, rx_queue_index)`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;

/// `return bpf_redirect_map(map_fd, ctx->rx_queue_index, XDP_PASS);` (see the module doc).
pub fn redirect_program(map_fd: RawFd) -> [BpfInsn; 6] {
    [
        insn(BPF_LDX_MEM_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        insn(BPF_LD_IMM_DW, 1, sys::BPF_PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0), // upper 32 bits of the 64-bit immediate
        insn(BPF_ALU64_MOV_K, 3, 0, 0, sys::XDP_PASS),
        insn(BPF_JMP_CALL, 0, 0, 0, sys::BPF_FUNC_REDIRECT_MAP),
        insn(BPF_JMP_EXIT, 0, 0, 0, 0),
    ]
}

/// Loads the redirect program for `map_fd`. On failure the error carries the verifier's log.
pub fn load_redirect_program(map_fd: RawFd) -> Result<OwnedFd, (io::Error, String)> {
    let prog = redirect_program(map_fd);
    let license = c"GPL";
    let mut log = vec![0u8; 4096];
    let mut attr = sys::ProgLoadAttr {
        prog_type: sys::BPF_PROG_TYPE_XDP,
        insn_cnt: prog.len() as u32,
        insns: prog.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: obj_name("vecswitch_xsk"),
        expected_attach_type: sys::BPF_XDP,
        ..Default::default()
    };
    match bpf(sys::BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(owned(fd)),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            Err((e, String::from_utf8_lossy(&log[..end]).trim().to_string()))
        }
    }
}

/// Attaches `prog` to interface `ifindex` in the given XDP mode (`XDP_FLAGS_DRV_MODE` or
/// `XDP_FLAGS_SKB_MODE`); the program stays attached as long as the returned link is open.
pub fn link_xdp(prog: RawFd, ifindex: u32, mode_flags: u32) -> io::Result<OwnedFd> {
    let mut attr = sys::LinkCreateAttr {
        prog_fd: prog as u32,
        target_ifindex: ifindex,
        attach_type: sys::BPF_XDP,
        flags: mode_flags,
    };
    bpf(sys::BPF_LINK_CREATE, &mut attr).map(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_encodes_registers_and_map_relocation() {
        let p = redirect_program(7);
        // r2 = *(u32 *)(r1 + 16): dst 2 in the low nibble, src 1 in the high nibble.
        assert_eq!((p[0].code, p[0].regs, p[0].off), (0x61, 0x12, 16));
        // ld_imm64 r1 with BPF_PSEUDO_MAP_FD in src, the fd in imm, a zero second half.
        assert_eq!((p[1].code, p[1].regs, p[1].imm), (0x18, 0x11, 7));
        assert_eq!(p[2], BpfInsn::default());
        assert_eq!((p[3].code, p[3].regs, p[3].imm), (0xb7, 0x03, 2));
        assert_eq!((p[4].code, p[4].imm), (0x85, 51));
        assert_eq!(p[5].code, 0x95);
    }

    #[test]
    fn names_are_cut_to_15_bytes_and_terminated() {
        let n = obj_name("a_name_longer_than_fifteen");
        assert_eq!(&n[..15], b"a_name_longer_t");
        assert_eq!(n[15], 0);
    }
}
