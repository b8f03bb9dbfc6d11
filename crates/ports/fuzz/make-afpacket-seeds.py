#!/usr/bin/env python3
"""Writes the af_packet_rx seeds (seeds/af_packet_rx/): a selector byte (even: TPACKET_V3 ring of
two 4 KiB blocks, odd: TPACKET_V2 ring of four 2 KiB slots; the rest of the byte sets the burst)
then the ring image as the kernel fills it (offsets from crates/ports/src/af_packet/sys.rs, native
= little-endian byte order). Run from crates/ports/fuzz."""
import os, struct

out = "seeds/af_packet_rx"
os.makedirs(out, exist_ok=True)
BLOCK = 4096
USER, VLAN_VALID, TPID_VALID, CSUM = 1, 1 << 4, 1 << 6, 1 << 3

def frame(seq, n, ethertype=0x0800):
    return bytes.fromhex("020000000002" "020000000001") + struct.pack(">H", ethertype) + bytes([seq]) * (n - 14)

def put(img, at, b):
    img[at:at + len(b)] = b

def v3(blocks, sel=0x40):
    img = bytearray(2 * BLOCK)
    for bi, frames in enumerate(blocks):
        if frames is None:
            continue
        base, off = bi * BLOCK, 48
        put(img, base + 16, struct.pack("<I", off))
        put(img, base + 12, struct.pack("<I", len(frames)))
        for i, (f, status, tci, tpid) in enumerate(frames):
            mac = 80
            nxt = 0 if i + 1 == len(frames) else (mac + len(f) + 15) & ~15
            h = base + off
            put(img, h + 0, struct.pack("<I", nxt))
            put(img, h + 12, struct.pack("<I", len(f)))
            put(img, h + 16, struct.pack("<I", len(f)))
            put(img, h + 20, struct.pack("<I", status))
            put(img, h + 24, struct.pack("<H", mac))
            put(img, h + 32, struct.pack("<I", tci))
            put(img, h + 36, struct.pack("<H", tpid))
            put(img, h + mac, f)
            off += nxt
        put(img, base + 8, struct.pack("<I", USER))
    return bytes([sel]) + bytes(img)

def v2(slots, sel=0x41):
    img = bytearray(2 * BLOCK)
    for i, s in enumerate(slots):
        if s is None:
            continue
        f, status, tci, tpid = s
        at = i * 2048
        snap = min(len(f), 2048 - 66)
        put(img, at + 4, struct.pack("<I", len(f)))
        put(img, at + 8, struct.pack("<I", snap))
        put(img, at + 12, struct.pack("<H", 66))
        put(img, at + 24, struct.pack("<HH", tci, tpid))
        put(img, at + 66, f[:snap])
        put(img, at + 0, struct.pack("<I", USER | status))
    return bytes([sel]) + bytes(img)

def w(name, b):
    # Trailing zeros add nothing the walk would not read as zero anyway.
    open(os.path.join(out, name), "wb").write(b.rstrip(b"\0") or b"\0")

p = lambda seq, n, st=0, tci=0, tpid=0: (frame(seq, n), st, tci, tpid)
w("v3-two-blocks", v3([[p(0, 60), p(1, 200), p(2, 1000)], [p(3, 60)]]))
w("v3-burst-of-one", v3([[p(0, 60), p(1, 60)], [p(2, 60)]], sel=0))
w("v3-vlan-tags", v3([[p(0, 60, USER | VLAN_VALID, 100, 0), p(1, 60, USER | VLAN_VALID | TPID_VALID, 7, 0x88A8)]]))
w("v3-csum-not-ready", v3([[p(0, 80, USER | CSUM)]]))
w("v3-full-block", v3([[p(0, 1500), p(1, 1500)], None]))
w("v3-kernel-owned", bytes([0]) + bytes(64))
w("v2-four-slots", v2([p(0, 60), p(1, 1514), p(2, 60), p(3, 1000)]))
w("v2-vlan", v2([p(0, 60, VLAN_VALID, 100, 0), p(1, 60, VLAN_VALID | TPID_VALID, 5, 0x88A8)]))
w("v2-truncated-snap", v2([p(0, 3000)]))
w("v2-gap", v2([p(0, 60), None, p(2, 60)], sel=3))
