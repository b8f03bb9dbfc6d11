//! Control-channel messages of memif 2.0: [`Msg`] with [`Msg::parse`] (untrusted bytes in, never a
//! panic) and [`Msg::emit`] (a fixed 128-byte record out).
//!
//! Wire format (DPDK `drivers/net/memif/memif.h`, VPP `src/plugins/memif/memif.h`): every message
//! is one SOCK_SEQPACKET record of exactly 128 bytes (`memif_msg_t`, packed, aligned to 128): a
//! little-endian `u16` type at offset 0, then a packed body starting at offset 2. File descriptors
//! (region memfd, ring eventfd) travel beside the record as SCM_RIGHTS ancillary data; they are not
//! part of this module.

/// Size of every control message on the wire.
pub const MSG_SIZE: usize = 128;
/// memif protocol version 2.0 (`(major << 8) | minor`).
pub const VERSION: u16 = 2 << 8;
/// Bytes of the name fields (`MEMIF_NAME_SZ`).
pub const NAME_SIZE: usize = 32;
/// Bytes of the secret field of INIT.
pub const SECRET_SIZE: usize = 24;
/// Bytes of the reason string of DISCONNECT.
pub const REASON_SIZE: usize = 96;
/// `memif_msg_add_ring_t.flags` bit: the ring carries client→server (S2M / C2S) traffic.
pub const ADD_RING_FLAG_C2S: u16 = 1;
/// `memif_interface_mode_t`: Ethernet frames (the only mode this port speaks).
pub const MODE_ETHERNET: u8 = 0;

/// Message type codes (`memif_msg_type_t`).
mod ty {
    pub const ACK: u16 = 1;
    pub const HELLO: u16 = 2;
    pub const INIT: u16 = 3;
    pub const ADD_REGION: u16 = 4;
    pub const ADD_RING: u16 = 5;
    pub const CONNECT: u16 = 6;
    pub const CONNECTED: u16 = 7;
    pub const DISCONNECT: u16 = 8;
}

/// Byte offsets inside the 128-byte record (body starts at 2).
mod field {
    pub const TYPE: usize = 0;
    pub const BODY: usize = 2;
    // HELLO
    pub const HELLO_NAME: usize = BODY;
    pub const HELLO_MIN_VERSION: usize = BODY + 32;
    pub const HELLO_MAX_VERSION: usize = BODY + 34;
    pub const HELLO_MAX_REGION: usize = BODY + 36;
    pub const HELLO_MAX_C2S_RING: usize = BODY + 38;
    pub const HELLO_MAX_S2C_RING: usize = BODY + 40;
    pub const HELLO_MAX_LOG2_RING_SIZE: usize = BODY + 42;
    // INIT
    pub const INIT_VERSION: usize = BODY;
    pub const INIT_ID: usize = BODY + 2;
    pub const INIT_MODE: usize = BODY + 6;
    pub const INIT_SECRET: usize = BODY + 7;
    pub const INIT_NAME: usize = BODY + 31;
    // ADD_REGION
    pub const REGION_INDEX: usize = BODY;
    pub const REGION_SIZE: usize = BODY + 2;
    // ADD_RING
    pub const RING_FLAGS: usize = BODY;
    pub const RING_INDEX: usize = BODY + 2;
    pub const RING_REGION: usize = BODY + 4;
    pub const RING_OFFSET: usize = BODY + 6;
    pub const RING_LOG2_SIZE: usize = BODY + 10;
    pub const RING_PRIVATE_HDR_SIZE: usize = BODY + 11;
    // CONNECT / CONNECTED
    pub const IF_NAME: usize = BODY;
    // DISCONNECT
    pub const DISC_CODE: usize = BODY;
    pub const DISC_STRING: usize = BODY + 4;
}

/// Why a received record is not a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MsgError {
    #[error("control message is {len} bytes, memif messages are exactly {MSG_SIZE}")]
    BadLength { len: usize },
    #[error("unknown control message type {ty} (accepted: 1..=8)")]
    UnknownType { ty: u16 },
}

/// HELLO (server → client): what the server supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub name: String,
    pub min_version: u16,
    pub max_version: u16,
    /// Highest region index the server accepts.
    pub max_region: u16,
    /// Highest client→server ring index the server accepts.
    pub max_c2s_ring: u16,
    /// Highest server→client ring index the server accepts.
    pub max_s2c_ring: u16,
    pub max_log2_ring_size: u8,
}

/// INIT (client → server): which interface id the client wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Init {
    pub version: u16,
    pub id: u32,
    pub mode: u8,
    /// Secret bytes up to the first NUL (at most [`SECRET_SIZE`]).
    pub secret: Vec<u8>,
    pub name: String,
}

/// ADD_RING (client → server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddRing {
    pub flags: u16,
    pub index: u16,
    pub region: u16,
    pub offset: u32,
    pub log2_ring_size: u8,
    pub private_hdr_size: u16,
}

/// One memif control message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    Ack,
    Hello(Hello),
    Init(Init),
    AddRegion { index: u16, size: u64 },
    AddRing(AddRing),
    Connect { if_name: String },
    Connected { if_name: String },
    Disconnect { code: u32, reason: String },
}

fn get_u16(b: &[u8; MSG_SIZE], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn get_u32(b: &[u8; MSG_SIZE], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn get_u64(b: &[u8; MSG_SIZE], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}
/// Bytes of a fixed field up to its first NUL (the peer may omit the NUL when the field is full).
fn get_cstr(b: &[u8; MSG_SIZE], at: usize, size: usize) -> &[u8] {
    let f = &b[at..at + size];
    let end = f.iter().position(|&c| c == 0).unwrap_or(size);
    &f[..end]
}
fn get_string(b: &[u8; MSG_SIZE], at: usize, size: usize) -> String {
    String::from_utf8_lossy(get_cstr(b, at, size)).into_owned()
}
fn put_u16(b: &mut [u8; MSG_SIZE], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8; MSG_SIZE], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8; MSG_SIZE], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
/// Copies `s` into a fixed field, truncated so that a terminating NUL always fits (`strlcpy`).
fn put_str(b: &mut [u8; MSG_SIZE], at: usize, size: usize, s: &[u8]) {
    let n = s.len().min(size - 1);
    b[at..at + n].copy_from_slice(&s[..n]);
}

impl Msg {
    /// Parses one received record. Any 128-byte record with a known type parses: field values are
    /// checked by the state machine that uses them, not here.
    pub fn parse(bytes: &[u8]) -> Result<Msg, MsgError> {
        let b: &[u8; MSG_SIZE] = bytes
            .try_into()
            .map_err(|_| MsgError::BadLength { len: bytes.len() })?;
        use field::*;
        Ok(match get_u16(b, TYPE) {
            ty::ACK => Msg::Ack,
            ty::HELLO => Msg::Hello(Hello {
                name: get_string(b, HELLO_NAME, NAME_SIZE),
                min_version: get_u16(b, HELLO_MIN_VERSION),
                max_version: get_u16(b, HELLO_MAX_VERSION),
                max_region: get_u16(b, HELLO_MAX_REGION),
                max_c2s_ring: get_u16(b, HELLO_MAX_C2S_RING),
                max_s2c_ring: get_u16(b, HELLO_MAX_S2C_RING),
                max_log2_ring_size: b[HELLO_MAX_LOG2_RING_SIZE],
            }),
            ty::INIT => Msg::Init(Init {
                version: get_u16(b, INIT_VERSION),
                id: get_u32(b, INIT_ID),
                mode: b[INIT_MODE],
                secret: get_cstr(b, INIT_SECRET, SECRET_SIZE).to_vec(),
                name: get_string(b, INIT_NAME, NAME_SIZE),
            }),
            ty::ADD_REGION => Msg::AddRegion {
                index: get_u16(b, REGION_INDEX),
                size: get_u64(b, REGION_SIZE),
            },
            ty::ADD_RING => Msg::AddRing(AddRing {
                flags: get_u16(b, RING_FLAGS),
                index: get_u16(b, RING_INDEX),
                region: get_u16(b, RING_REGION),
                offset: get_u32(b, RING_OFFSET),
                log2_ring_size: b[RING_LOG2_SIZE],
                private_hdr_size: get_u16(b, RING_PRIVATE_HDR_SIZE),
            }),
            ty::CONNECT => Msg::Connect {
                if_name: get_string(b, IF_NAME, NAME_SIZE),
            },
            ty::CONNECTED => Msg::Connected {
                if_name: get_string(b, IF_NAME, NAME_SIZE),
            },
            ty::DISCONNECT => Msg::Disconnect {
                code: get_u32(b, DISC_CODE),
                reason: get_string(b, DISC_STRING, REASON_SIZE),
            },
            other => return Err(MsgError::UnknownType { ty: other }),
        })
    }

    /// The 128-byte record for this message. Strings longer than their field are truncated so that
    /// the field keeps a terminating NUL, except the secret, which may fill all 24 bytes.
    pub fn emit(&self) -> [u8; MSG_SIZE] {
        use field::*;
        let mut b = [0u8; MSG_SIZE];
        match self {
            Msg::Ack => put_u16(&mut b, TYPE, ty::ACK),
            Msg::Hello(h) => {
                put_u16(&mut b, TYPE, ty::HELLO);
                put_str(&mut b, HELLO_NAME, NAME_SIZE, h.name.as_bytes());
                put_u16(&mut b, HELLO_MIN_VERSION, h.min_version);
                put_u16(&mut b, HELLO_MAX_VERSION, h.max_version);
                put_u16(&mut b, HELLO_MAX_REGION, h.max_region);
                put_u16(&mut b, HELLO_MAX_C2S_RING, h.max_c2s_ring);
                put_u16(&mut b, HELLO_MAX_S2C_RING, h.max_s2c_ring);
                b[HELLO_MAX_LOG2_RING_SIZE] = h.max_log2_ring_size;
            }
            Msg::Init(i) => {
                put_u16(&mut b, TYPE, ty::INIT);
                put_u16(&mut b, INIT_VERSION, i.version);
                put_u32(&mut b, INIT_ID, i.id);
                b[INIT_MODE] = i.mode;
                let n = i.secret.len().min(SECRET_SIZE);
                b[INIT_SECRET..INIT_SECRET + n].copy_from_slice(&i.secret[..n]);
                put_str(&mut b, INIT_NAME, NAME_SIZE, i.name.as_bytes());
            }
            Msg::AddRegion { index, size } => {
                put_u16(&mut b, TYPE, ty::ADD_REGION);
                put_u16(&mut b, REGION_INDEX, *index);
                put_u64(&mut b, REGION_SIZE, *size);
            }
            Msg::AddRing(r) => {
                put_u16(&mut b, TYPE, ty::ADD_RING);
                put_u16(&mut b, RING_FLAGS, r.flags);
                put_u16(&mut b, RING_INDEX, r.index);
                put_u16(&mut b, RING_REGION, r.region);
                put_u32(&mut b, RING_OFFSET, r.offset);
                b[RING_LOG2_SIZE] = r.log2_ring_size;
                put_u16(&mut b, RING_PRIVATE_HDR_SIZE, r.private_hdr_size);
            }
            Msg::Connect { if_name } => {
                put_u16(&mut b, TYPE, ty::CONNECT);
                put_str(&mut b, IF_NAME, NAME_SIZE, if_name.as_bytes());
            }
            Msg::Connected { if_name } => {
                put_u16(&mut b, TYPE, ty::CONNECTED);
                put_str(&mut b, IF_NAME, NAME_SIZE, if_name.as_bytes());
            }
            Msg::Disconnect { code, reason } => {
                put_u16(&mut b, TYPE, ty::DISCONNECT);
                put_u32(&mut b, DISC_CODE, *code);
                put_str(&mut b, DISC_STRING, REASON_SIZE, reason.as_bytes());
            }
        }
        b
    }

    /// Short name of the message type, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Msg::Ack => "ACK",
            Msg::Hello(_) => "HELLO",
            Msg::Init(_) => "INIT",
            Msg::AddRegion { .. } => "ADD_REGION",
            Msg::AddRing(_) => "ADD_RING",
            Msg::Connect { .. } => "CONNECT",
            Msg::Connected { .. } => "CONNECTED",
            Msg::Disconnect { .. } => "DISCONNECT",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<Msg> {
        vec![
            Msg::Ack,
            Msg::Hello(Hello {
                name: "vecswitch".into(),
                min_version: VERSION,
                max_version: VERSION,
                max_region: 15,
                max_c2s_ring: 0,
                max_s2c_ring: 0,
                max_log2_ring_size: 14,
            }),
            Msg::Init(Init {
                version: VERSION,
                id: 0xdead_beef,
                mode: MODE_ETHERNET,
                secret: b"s3cret".to_vec(),
                name: "client".into(),
            }),
            Msg::AddRegion {
                index: 3,
                size: 0x1_0000_0001,
            },
            Msg::AddRing(AddRing {
                flags: ADD_RING_FLAG_C2S,
                index: 1,
                region: 2,
                offset: 0x1234_5678,
                log2_ring_size: 10,
                private_hdr_size: 0,
            }),
            Msg::Connect {
                if_name: "memif0".into(),
            },
            Msg::Connected {
                if_name: "memif1".into(),
            },
            Msg::Disconnect {
                code: 7,
                reason: "ID not found".into(),
            },
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in all() {
            let b = m.emit();
            assert_eq!(Msg::parse(&b).unwrap(), m, "{}", m.kind());
        }
    }

    #[test]
    fn byte_layout_matches_memif_h() {
        // Hand-built records, offsets from the packed structs in memif.h.
        let mut b = [0u8; MSG_SIZE];
        b[0] = 4; // ADD_REGION
        b[2] = 1; // index
        b[4..12].copy_from_slice(&4096u64.to_le_bytes());
        assert_eq!(
            Msg::parse(&b).unwrap(),
            Msg::AddRegion {
                index: 1,
                size: 4096
            }
        );

        let mut b = [0u8; MSG_SIZE];
        b[0] = 5; // ADD_RING
        b[2] = 1; // flags = C2S
        b[4] = 0; // index
        b[6] = 0; // region
        b[8..12].copy_from_slice(&4224u32.to_le_bytes());
        b[12] = 8; // log2 ring size
        b[13] = 0; // private hdr size (u16 at odd offset: packed)
        let r = match Msg::parse(&b).unwrap() {
            Msg::AddRing(r) => r,
            other => panic!("parsed as {other:?}"),
        };
        assert_eq!((r.flags, r.offset, r.log2_ring_size), (1, 4224, 8));

        let mut b = [0u8; MSG_SIZE];
        b[0] = 3; // INIT
        b[2..4].copy_from_slice(&VERSION.to_le_bytes());
        b[4..8].copy_from_slice(&7u32.to_le_bytes());
        b[8] = 0;
        b[9..12].copy_from_slice(b"abc");
        b[33..36].copy_from_slice(b"xyz");
        let Msg::Init(i) = Msg::parse(&b).unwrap() else {
            panic!("not INIT")
        };
        assert_eq!(
            (i.version, i.id, i.secret.as_slice(), i.name.as_str()),
            (0x200, 7, &b"abc"[..], "xyz")
        );

        let Msg::Hello(h) = all()[1].clone() else {
            unreachable!()
        };
        let b = Msg::Hello(h).emit();
        assert_eq!(&b[0..2], &[2, 0]);
        assert_eq!(&b[2..11], b"vecswitch");
        assert_eq!(&b[34..38], &[0, 2, 0, 2]);
        assert_eq!(b[44], 14);
    }

    #[test]
    fn bad_length_and_type_are_errors() {
        assert_eq!(
            Msg::parse(&[0u8; 127]),
            Err(MsgError::BadLength { len: 127 })
        );
        assert_eq!(Msg::parse(&[]), Err(MsgError::BadLength { len: 0 }));
        let mut b = [0u8; MSG_SIZE];
        assert_eq!(Msg::parse(&b), Err(MsgError::UnknownType { ty: 0 }));
        b[0] = 9;
        assert_eq!(Msg::parse(&b), Err(MsgError::UnknownType { ty: 9 }));
    }

    #[test]
    fn unterminated_strings_are_cut_at_field_end() {
        let mut b = [0xffu8; MSG_SIZE];
        b[0] = 8;
        b[1] = 0;
        let Msg::Disconnect { reason, .. } = Msg::parse(&b).unwrap() else {
            panic!()
        };
        assert_eq!(reason.chars().count(), REASON_SIZE); // lossy replacement chars, 96 of them
        let long = "x".repeat(200);
        let m = Msg::Connect { if_name: long };
        let Msg::Connect { if_name } = Msg::parse(&m.emit()).unwrap() else {
            panic!()
        };
        assert_eq!(if_name.len(), NAME_SIZE - 1);
    }
}
