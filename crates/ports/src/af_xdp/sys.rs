//! Kernel ABI the AF_XDP port uses, written out so that layouts are visible and checked at compile
//! time: `linux/if_xdp.h` (socket, UMEM, rings, statistics) and the parts of `linux/bpf.h` needed
//! to create an XSKMAP, load a program and link it to an interface.

// linux/socket.h
pub const AF_XDP: libc::c_int = 44;
pub const SOL_XDP: libc::c_int = 283;

// linux/if_xdp.h: socket options.
pub const XDP_MMAP_OFFSETS: libc::c_int = 1;
pub const XDP_RX_RING: libc::c_int = 2;
pub const XDP_TX_RING: libc::c_int = 3;
pub const XDP_UMEM_REG: libc::c_int = 4;
pub const XDP_UMEM_FILL_RING: libc::c_int = 5;
pub const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
pub const XDP_STATISTICS: libc::c_int = 7;
/// Frames the kernel sends per `sendto` in copy mode (kernel >= 6.17; 32 before, and by default).
pub const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;
/// The copy-mode budget per kick where [`XDP_MAX_TX_SKB_BUDGET`] is not set (`TX_BATCH_SIZE`,
/// net/xdp/xsk.c).
pub const TX_BATCH_SIZE: u32 = 32;

// linux/if_xdp.h: `sockaddr_xdp.sxdp_flags`.
pub const XDP_COPY: u16 = 1 << 1;
pub const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;

// linux/if_xdp.h: ring flags word.
pub const XDP_RING_NEED_WAKEUP: u32 = 1;

// linux/if_xdp.h: mmap page offsets of the four rings.
pub const XDP_PGOFF_RX_RING: libc::off_t = 0;
pub const XDP_PGOFF_TX_RING: libc::off_t = 0x8000_0000;
pub const XDP_UMEM_PGOFF_FILL_RING: libc::off_t = 0x1_0000_0000;
pub const XDP_UMEM_PGOFF_COMPLETION_RING: libc::off_t = 0x1_8000_0000;

// linux/socket.h: busy polling (SO_BUSY_POLL = 46 is in libc).
pub const SO_PREFER_BUSY_POLL: libc::c_int = 69;
pub const SO_BUSY_POLL_BUDGET: libc::c_int = 70;
// asm-generic/socket.h: the NAPI instance a socket's frames came from (0: none known).
pub const SO_INCOMING_NAPI_ID: libc::c_int = 56;

/// `struct sockaddr_xdp`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct SockaddrXdp {
    pub family: u16,
    pub flags: u16,
    pub ifindex: u32,
    pub queue_id: u32,
    pub shared_umem_fd: u32,
}

/// `struct xdp_umem_reg` (with `tx_metadata_len`, kernel >= 6.8; older kernels read the first
/// 24 bytes only when told a shorter length, but accept this one with the extra fields zero).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct XdpUmemReg {
    pub addr: u64,
    pub len: u64,
    pub chunk_size: u32,
    pub headroom: u32,
    pub flags: u32,
    pub tx_metadata_len: u32,
}

/// `struct xdp_ring_offset`: byte offsets in a ring's mapping.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct XdpRingOffset {
    pub producer: u64,
    pub consumer: u64,
    pub desc: u64,
    pub flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct XdpMmapOffsets {
    pub rx: XdpRingOffset,
    pub tx: XdpRingOffset,
    pub fr: XdpRingOffset,
    pub cr: XdpRingOffset,
}

/// `struct xdp_desc`: one RX or TX descriptor.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct XdpDesc {
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// `struct xdp_statistics`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct XdpStatistics {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// Where the kernel puts a received frame inside its UMEM chunk in copy mode:
/// `XDP_PACKET_HEADROOM` (linux/bpf.h), after the UMEM headroom (0 here).
pub const XDP_PACKET_HEADROOM: u32 = 256;

// linux/bpf.h: commands.
pub const BPF_MAP_CREATE: libc::c_int = 0;
pub const BPF_MAP_LOOKUP_ELEM: libc::c_int = 1;
pub const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
pub const BPF_PROG_LOAD: libc::c_int = 5;
pub const BPF_LINK_CREATE: libc::c_int = 28;
pub const BPF_LINK_UPDATE: libc::c_int = 29;

pub const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const BPF_MAP_TYPE_XSKMAP: u32 = 17;
pub const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`: BPF_XDP.
pub const BPF_XDP: u32 = 37;
/// `ld_imm64` source register meaning "imm is a map fd" (relocated by the verifier).
pub const BPF_PSEUDO_MAP_FD: u8 = 1;
/// `BPF_FUNC_map_lookup_elem`.
pub const BPF_FUNC_MAP_LOOKUP_ELEM: i32 = 1;
/// `BPF_FUNC_redirect`.
pub const BPF_FUNC_REDIRECT: i32 = 23;
/// `BPF_FUNC_redirect_map`.
pub const BPF_FUNC_REDIRECT_MAP: i32 = 51;
/// `enum xdp_action`.
pub const XDP_PASS: i32 = 2;

// linux/if_link.h: XDP attach flags.
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// `union bpf_attr` for BPF_MAP_CREATE (the fields up to `map_name`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MapCreateAttr {
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub map_flags: u32,
    pub inner_map_fd: u32,
    pub numa_node: u32,
    pub map_name: [u8; 16],
}

/// `union bpf_attr` for BPF_MAP_UPDATE_ELEM.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct MapElemAttr {
    pub map_fd: u32,
    pub pad: u32,
    pub key: u64,
    pub value: u64,
    pub flags: u64,
}

/// `union bpf_attr` for BPF_PROG_LOAD (the fields up to `expected_attach_type`).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct ProgLoadAttr {
    pub prog_type: u32,
    pub insn_cnt: u32,
    pub insns: u64,
    pub license: u64,
    pub log_level: u32,
    pub log_size: u32,
    pub log_buf: u64,
    pub kern_version: u32,
    pub prog_flags: u32,
    pub prog_name: [u8; 16],
    pub prog_ifindex: u32,
    pub expected_attach_type: u32,
}

/// `union bpf_attr` for BPF_LINK_CREATE (the common fields).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct LinkCreateAttr {
    pub prog_fd: u32,
    pub target_ifindex: u32,
    pub attach_type: u32,
    pub flags: u32,
}

/// `union bpf_attr` for BPF_LINK_UPDATE.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct LinkUpdateAttr {
    pub link_fd: u32,
    pub new_prog_fd: u32,
    pub flags: u32,
    pub old_prog_fd: u32,
}

/// `struct bpf_insn`: opcode, dst (low nibble) and src (high nibble) registers, offset, immediate.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BpfInsn {
    pub code: u8,
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

const _: () = assert!(core::mem::size_of::<SockaddrXdp>() == 16);
const _: () = assert!(core::mem::size_of::<XdpUmemReg>() == 32);
const _: () = assert!(core::mem::size_of::<XdpMmapOffsets>() == 128);
const _: () = assert!(core::mem::size_of::<XdpDesc>() == 16);
const _: () = assert!(core::mem::size_of::<XdpStatistics>() == 48);
const _: () = assert!(core::mem::size_of::<MapCreateAttr>() == 44);
const _: () = assert!(core::mem::size_of::<MapElemAttr>() == 32);
const _: () = assert!(core::mem::size_of::<ProgLoadAttr>() == 72);
const _: () = assert!(core::mem::size_of::<LinkCreateAttr>() == 16);
const _: () = assert!(core::mem::size_of::<LinkUpdateAttr>() == 16);
const _: () = assert!(core::mem::size_of::<BpfInsn>() == 8);
