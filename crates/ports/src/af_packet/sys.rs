//! Kernel ABI of `linux/if_packet.h` that the rings use, written out here so that the layout is
//! visible and checked at compile time.

pub const SOL_PACKET: libc::c_int = 263;
pub const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
pub const PACKET_RX_RING: libc::c_int = 5;
pub const PACKET_STATISTICS: libc::c_int = 6;
pub const PACKET_VERSION: libc::c_int = 10;
pub const PACKET_TX_RING: libc::c_int = 13;
pub const PACKET_LOSS: libc::c_int = 14;
pub const PACKET_FANOUT: libc::c_int = 18;
pub const PACKET_QDISC_BYPASS: libc::c_int = 20;
pub const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
pub const PACKET_MR_PROMISC: libc::c_ushort = 1;
pub const PACKET_FANOUT_HASH: u32 = 0;
pub const TPACKET_V2: libc::c_int = 1;
pub const TPACKET_V3: libc::c_int = 2;
pub const PACKET_OUTGOING: u8 = 4;
pub const ETH_P_ALL: u16 = 0x0003;

pub const TP_STATUS_KERNEL: u32 = 0;
pub const TP_STATUS_USER: u32 = 1;
/// The frame's L4 checksum was left to offload (`CHECKSUM_PARTIAL`): only the pseudo-header sum is
/// in the checksum field.
pub const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
pub const TP_STATUS_AVAILABLE: u32 = 0;
pub const TP_STATUS_SEND_REQUEST: u32 = 1;
pub const TP_STATUS_SENDING: u32 = 2;
pub const TP_STATUS_WRONG_FORMAT: u32 = 4;

/// `struct tpacket_req3`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct TpacketReq3 {
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
    pub retire_blk_tov: u32,
    pub sizeof_priv: u32,
    pub feature_req_word: u32,
}

/// `struct tpacket_req` (TPACKET_V1/V2 rings).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct TpacketReq {
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
}

/// `struct tpacket_stats_v3`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct TpacketStatsV3 {
    pub packets: u32,
    pub drops: u32,
    pub freeze_q_cnt: u32,
}

/// `struct packet_mreq`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PacketMreq {
    pub ifindex: libc::c_int,
    pub kind: libc::c_ushort,
    pub alen: libc::c_ushort,
    pub address: [u8; 8],
}

/// `struct ifreq` with the union seen as bytes (we read `ifr_flags` and `ifr_mtu`, both at offset 0).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct IfReq {
    pub name: [libc::c_char; 16],
    pub data: [u8; 24],
}

/// Byte offsets in `struct tpacket_block_desc` (version, offset_to_priv, then `tpacket_hdr_v1`).
pub mod block {
    pub const STATUS: usize = 8;
    pub const NUM_PKTS: usize = 12;
    pub const OFFSET_TO_FIRST_PKT: usize = 16;
}

/// Byte offsets in `struct tpacket3_hdr` (48 bytes), followed by `struct sockaddr_ll`.
pub mod hdr3 {
    pub const NEXT_OFFSET: usize = 0;
    pub const SNAPLEN: usize = 12;
    pub const LEN: usize = 16;
    pub const STATUS: usize = 20;
    pub const MAC: usize = 24;
    /// `hv1.tp_vlan_tci` (u32) and `hv1.tp_vlan_tpid` (u16).
    pub const VLAN_TCI: usize = 32;
    pub const VLAN_TPID: usize = 36;
    /// `TPACKET_ALIGN(sizeof(struct tpacket3_hdr))`: where `sockaddr_ll` starts on RX, and where
    /// frame data starts in a TX slot.
    pub const SIZE: usize = 48;
    /// `sockaddr_ll.sll_pkttype`, from the start of `tpacket3_hdr`.
    pub const PKTTYPE: usize = SIZE + 10;
    /// Header plus `sockaddr_ll` (`TPACKET3_HDRLEN`).
    pub const HDRLEN: usize = SIZE + 20;
}

/// Byte offsets in `struct tpacket2_hdr` (32 bytes), followed by `struct sockaddr_ll`.
pub mod hdr2 {
    pub const STATUS: usize = 0;
    pub const LEN: usize = 4;
    pub const SNAPLEN: usize = 8;
    pub const MAC: usize = 12;
    /// `tp_vlan_tci` (u16) and `tp_vlan_tpid` (u16).
    pub const VLAN_TCI: usize = 24;
    pub const VLAN_TPID: usize = 26;
    /// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`: where `sockaddr_ll` starts on RX, and
    /// where frame data starts in a TX slot.
    pub const SIZE: usize = 32;
    /// `sockaddr_ll.sll_pkttype`, from the start of `tpacket2_hdr`.
    pub const PKTTYPE: usize = SIZE + 10;
    /// Header plus `sockaddr_ll` (`TPACKET2_HDRLEN`).
    pub const HDRLEN: usize = SIZE + 20;
}

const _: () = assert!(core::mem::size_of::<TpacketReq3>() == 28);
const _: () = assert!(core::mem::size_of::<TpacketReq>() == 16);
const _: () = assert!(core::mem::size_of::<TpacketStatsV3>() == 12);
const _: () = assert!(core::mem::size_of::<PacketMreq>() == 16);
const _: () = assert!(core::mem::size_of::<IfReq>() == 40);
