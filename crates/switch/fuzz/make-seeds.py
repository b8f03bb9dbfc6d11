#!/usr/bin/env python3
"""Writes the l2_frames seeds (seeds/l2_frames/) in the format `testing::fuzz_frames` reads: per
frame a length byte, an extension byte 0x80|(len >> 8), then the frame; the frame's first byte
modulo 4 picks the port (0 a, 1 b, 2 c: bridge br; 3 x: cross-connected to a).
Run from crates/switch/fuzz."""
import os, struct

out = "seeds/l2_frames"
os.makedirs(out, exist_ok=True)

def mac(s):
    return bytes.fromhex(s.replace(":", ""))

def eth(dst, src, payload=b"", tags=(), ethertype=0x0800, size=60):
    b = mac(dst) + mac(src)
    for tpid, vid in tags:
        b += struct.pack(">HH", tpid, vid)
    b += struct.pack(">H", ethertype) + payload
    return b + bytes(max(0, size - len(b)))

def frames(*fs):
    b = b""
    for f in fs:
        assert len(f) < 16 * 256
        b += bytes([len(f) & 0xFF, 0x80 | (len(f) >> 8)]) + f
    return b

def w(name, b):
    open(os.path.join(out, name), "wb").write(b)

A, C, BC = "00:00:00:00:00:0a", "02:00:00:00:00:0c", "ff:ff:ff:ff:ff:ff"
# a (dst first byte 0x00 -> port a) and c (0x02 -> port c) learn each other, then unicast.
w("learn-then-forward", frames(eth(C, A), eth(A, C), eth(C, A), eth(A, C)))
w("broadcast-flood", frames(eth(BC, A), eth(BC, C)))
w("arp-broadcast", frames(eth(BC, A, bytes(28), ethertype=0x0806)))
w("dot1q", frames(eth(C, A, tags=[(0x8100, 100)]), eth(A, C, tags=[(0x8100, 100)])))
w("qinq", frames(eth(C, A, tags=[(0x88A8, 10), (0x8100, 20)])))
w("xconnect", frames(eth("03:00:00:00:00:01", A), eth("07:00:00:00:00:01", C)))
w("multicast-source", frames(eth(C, "01:00:5e:00:00:01"), eth("01:00:5e:00:00:01", C)))
w("zero-source", frames(eth(C, "00:00:00:00:00:00"), eth(A, "00:00:00:00:00:00")))
w("runts", frames(b"", b"\x00", eth(C, A)[:13], eth(C, A)[:14], eth(C, A)[:59]))
w("jumbo", frames(eth(C, A, size=1514), eth(A, C, size=1518), eth(C, A, size=4000)))
w("mac-limit", frames(*[eth(C, "02:00:00:00:01:%02x" % i) for i in range(40)]))
w("ipv6", frames(eth("00:00:5e:00:00:01", C, bytes(40), ethertype=0x86DD)))
