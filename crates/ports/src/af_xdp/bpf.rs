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
//!
//! ## The in-kernel cross-connect ([`count_redirect_program`])
//!
//! An offloaded `[[xconnect]]` (`offload = "xdp"`, docs/CONTROL.md) swaps the port's program,
//! on the same link (`BPF_LINK_UPDATE`, kernel >= 5.7), for one that counts the frame in a
//! one-slot per-CPU array (`{packets, bytes}`, [`create_counter_map`], read by
//! [`read_counter`]) and sends it out of the peer interface without leaving the kernel:
//!
//! ```text
//!  0: r6 = r1                       ; ctx (callee-saved across the helper call)
//!  1: r7 = *(u32 *)(r6 + 4)         ; ctx->data_end
//!  2: r8 = *(u32 *)(r6 + 0)         ; ctx->data
//!  3: r7 -= r8                      ; frame length (packet pointer difference: needs root)
//!  4: *(u32 *)(r10 - 4) = 0         ; key = 0 on the stack
//!  5: r2 = r10
//!  6: r2 += -4                      ; &key
//!  7: r1 = map_fd ll                ; ld_imm64, BPF_PSEUDO_MAP_FD (two slots: 7, 8)
//!  9: call bpf_map_lookup_elem      ; helper 1: this CPU's {packets, bytes}
//! 10: if r0 == 0 goto +6            ; (never: slot 0 exists) → 17
//! 11: r1 = *(u64 *)(r0 + 0)
//! 12: r1 += 1
//! 13: *(u64 *)(r0 + 0) = r1         ; packets += 1 (per-CPU: no atomic needed)
//! 14: r1 = *(u64 *)(r0 + 8)
//! 15: r1 += r7
//! 16: *(u64 *)(r0 + 8) = r1         ; bytes += length
//! 17: r1 = peer_ifindex
//! 18: r2 = 0
//! 19: call bpf_redirect             ; helper 23: returns XDP_REDIRECT
//! 20: exit
//! ```
//!
//! It is `count(ctx); return bpf_redirect(peer_ifindex, 0);`. The redirect itself (and its
//! failures) happens after the program returns, in the driver: on veth a frame that cannot be
//! redirected is counted in the receiving device's `rx_dropped`, one the peer cannot take in the
//! sending device's `tx_dropped` (drivers/net/veth.c, `veth_get_stats64`), which the port reads.

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

/// Creates the offload's counter: a per-CPU array of one `{packets: u64, bytes: u64}` slot.
pub fn create_counter_map() -> io::Result<OwnedFd> {
    let mut attr = sys::MapCreateAttr {
        map_type: sys::BPF_MAP_TYPE_PERCPU_ARRAY,
        key_size: 4,
        value_size: 16,
        max_entries: 1,
        map_name: obj_name("vecswitch_xcnt"),
        ..Default::default()
    };
    bpf(sys::BPF_MAP_CREATE, &mut attr).map(owned)
}

/// CPUs the kernel may run on (`/sys/devices/system/cpu/possible`, e.g. `0-1` or `0,2-3`): a
/// per-CPU map's value has one slot for each.
fn possible_cpus() -> io::Result<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("possible CPUs {s:?}"));
    let mut last = 0usize;
    for part in s.trim().split(',') {
        let hi = part.rsplit('-').next().ok_or_else(bad)?;
        last = last.max(hi.parse::<usize>().map_err(|_| bad())?);
    }
    Ok(last + 1)
}

/// The offload's counter summed over CPUs: `(packets, bytes)`.
pub fn read_counter(map: RawFd) -> io::Result<(u64, u64)> {
    let cpus = possible_cpus()?;
    let key: u32 = 0;
    let mut values = vec![0u64; 2 * cpus];
    let mut attr = sys::MapElemAttr {
        map_fd: map as u32,
        key: &key as *const u32 as u64,
        value: values.as_mut_ptr() as u64,
        ..Default::default()
    };
    // The kernel writes `round_up(value_size, 8) * possible CPUs` = 16 × cpus bytes: `values`.
    bpf(sys::BPF_MAP_LOOKUP_ELEM, &mut attr)?;
    Ok(values
        .chunks_exact(2)
        .fold((0, 0), |(p, b), v| (p + v[0], b + v[1])))
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
const BPF_LDX_MEM_DW: u8 = 0x01 | 0x60 | 0x18; // BPF_LDX | BPF_MEM | BPF_DW
const BPF_ST_MEM_W: u8 = 0x02 | 0x60; // BPF_ST | BPF_MEM | BPF_W
const BPF_STX_MEM_DW: u8 = 0x03 | 0x60 | 0x18; // BPF_STX | BPF_MEM | BPF_DW
const BPF_ALU64_MOV_X: u8 = 0x07 | 0xb0 | 0x08; // BPF_ALU64 | BPF_MOV | BPF_X
const BPF_ALU64_ADD_K: u8 = 0x07; // BPF_ALU64 | BPF_ADD | BPF_K
const BPF_ALU64_ADD_X: u8 = 0x07 | 0x08; // BPF_ALU64 | BPF_ADD | BPF_X
const BPF_ALU64_SUB_X: u8 = 0x07 | 0x10 | 0x08; // BPF_ALU64 | BPF_SUB | BPF_X
const BPF_JMP_JEQ_K: u8 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_LD_IMM_DW: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW
const BPF_ALU64_MOV_K: u8 = 0x07 | 0xb0; // BPF_ALU64 | BPF_MOV | BPF_K
const BPF_JMP_CALL: u8 = 0x05 | 0x80; // BPF_JMP | BPF_CALL
const BPF_JMP_EXIT: u8 = 0x05 | 0x90; // BPF_JMP | BPF_EXIT
/// `offsetof(struct xdp_md, rx_queue_index)`, `data`, `data_end`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
const XDP_MD_DATA: i16 = 0;
const XDP_MD_DATA_END: i16 = 4;

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

/// `count(ctx); return bpf_redirect(peer_ifindex, 0);` (see "The in-kernel cross-connect" in the
/// module doc for the listing).
pub fn count_redirect_program(counter_fd: RawFd, peer_ifindex: u32) -> [BpfInsn; 21] {
    [
        insn(BPF_ALU64_MOV_X, 6, 1, 0, 0),
        insn(BPF_LDX_MEM_W, 7, 6, XDP_MD_DATA_END, 0),
        insn(BPF_LDX_MEM_W, 8, 6, XDP_MD_DATA, 0),
        insn(BPF_ALU64_SUB_X, 7, 8, 0, 0),
        insn(BPF_ST_MEM_W, 10, 0, -4, 0),
        insn(BPF_ALU64_MOV_X, 2, 10, 0, 0),
        insn(BPF_ALU64_ADD_K, 2, 0, 0, -4),
        insn(BPF_LD_IMM_DW, 1, sys::BPF_PSEUDO_MAP_FD, 0, counter_fd),
        insn(0, 0, 0, 0, 0), // upper 32 bits of the 64-bit immediate
        insn(BPF_JMP_CALL, 0, 0, 0, sys::BPF_FUNC_MAP_LOOKUP_ELEM),
        insn(BPF_JMP_JEQ_K, 0, 0, 6, 0),
        insn(BPF_LDX_MEM_DW, 1, 0, 0, 0),
        insn(BPF_ALU64_ADD_K, 1, 0, 0, 1),
        insn(BPF_STX_MEM_DW, 0, 1, 0, 0),
        insn(BPF_LDX_MEM_DW, 1, 0, 8, 0),
        insn(BPF_ALU64_ADD_X, 1, 7, 0, 0),
        insn(BPF_STX_MEM_DW, 0, 1, 8, 0),
        insn(BPF_ALU64_MOV_K, 1, 0, 0, peer_ifindex as i32),
        insn(BPF_ALU64_MOV_K, 2, 0, 0, 0),
        insn(BPF_JMP_CALL, 0, 0, 0, sys::BPF_FUNC_REDIRECT),
        insn(BPF_JMP_EXIT, 0, 0, 0, 0),
    ]
}

/// Loads the redirect program for `map_fd`. On failure the error carries the verifier's log.
pub fn load_redirect_program(map_fd: RawFd) -> Result<OwnedFd, (io::Error, String)> {
    load_xdp_program(&redirect_program(map_fd), "vecswitch_xsk")
}

/// Loads the count-and-redirect program ([`count_redirect_program`]).
pub fn load_count_redirect_program(
    counter_fd: RawFd,
    peer_ifindex: u32,
) -> Result<OwnedFd, (io::Error, String)> {
    load_xdp_program(
        &count_redirect_program(counter_fd, peer_ifindex),
        "vecswitch_xc",
    )
}

/// Loads an XDP program. On failure the error carries the verifier's log.
fn load_xdp_program(prog: &[BpfInsn], name: &str) -> Result<OwnedFd, (io::Error, String)> {
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
        prog_name: obj_name(name),
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

/// Replaces the program of XDP link `link` by `prog` (`BPF_LINK_UPDATE`): atomic for the frames,
/// each runs the old or the new one.
pub fn link_update(link: RawFd, prog: RawFd) -> io::Result<()> {
    let mut attr = sys::LinkUpdateAttr {
        link_fd: link as u32,
        new_prog_fd: prog as u32,
        ..Default::default()
    };
    bpf(sys::BPF_LINK_UPDATE, &mut attr).map(|_| ())
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
    fn count_redirect_program_encodes_the_listing() {
        let p = count_redirect_program(9, 42);
        assert_eq!((p[0].code, p[0].regs), (0xbf, 0x16)); // r6 = r1
        assert_eq!((p[1].code, p[1].regs, p[1].off), (0x61, 0x67, 4)); // r7 = data_end
        assert_eq!((p[3].code, p[3].regs), (0x1f, 0x87)); // r7 -= r8
        assert_eq!((p[4].code, p[4].regs, p[4].off), (0x62, 0x0a, -4)); // key = 0
        assert_eq!((p[7].code, p[7].regs, p[7].imm), (0x18, 0x11, 9)); // map fd
        assert_eq!(p[8], BpfInsn::default());
        assert_eq!((p[9].code, p[9].imm), (0x85, 1)); // map_lookup_elem
                                                      // The null check jumps over the six counting instructions to `r1 = peer_ifindex`.
        assert_eq!((p[10].code, p[10].off), (0x15, 6));
        assert_eq!(
            (p[10 + 1 + 6].code, p[17].regs, p[17].imm),
            (0xb7, 0x01, 42)
        );
        assert_eq!((p[13].code, p[13].regs), (0x7b, 0x10)); // *(u64 *)(r0 + 0) = r1
        assert_eq!((p[16].code, p[16].off), (0x7b, 8));
        assert_eq!((p[19].code, p[19].imm), (0x85, 23)); // bpf_redirect
        assert_eq!(p[20].code, 0x95);
    }

    #[test]
    fn names_are_cut_to_15_bytes_and_terminated() {
        let n = obj_name("a_name_longer_than_fifteen");
        assert_eq!(&n[..15], b"a_name_longer_t");
        assert_eq!(n[15], 0);
    }
}
