#!/usr/bin/env python3
"""Writes the pcap_reader seeds (seeds/pcap_reader/): valid captures in both byte orders and
timestamp resolutions, and one file per reader error. Run from crates/ports/fuzz."""
import os, struct

MICROS, NANOS = 0xA1B2C3D4, 0xA1B23C4D
out = "seeds/pcap_reader"
os.makedirs(out, exist_ok=True)

def eth_udp(size):
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, size - 14, 1, 0, 64, 17, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 19, 0, 1]))
    s = sum(struct.unpack(">10H", ip))
    s = (s & 0xFFFF) + (s >> 16)
    ip = ip[:10] + struct.pack(">H", ~s & 0xFFFF) + ip[12:]
    udp = struct.pack(">HHHH", 1024, 1024, size - 34, 0)
    return eth + ip + udp + bytes(size - 42)

def header(magic, e="<", major=2, snaplen=65535, linktype=1):
    return struct.pack(e + "IHHiIII", magic, major, 4, 0, 0, snaplen, linktype)

def rec(sec, frac, data, e="<", orig=None, incl=None):
    incl = len(data) if incl is None else incl
    orig = len(data) if orig is None else orig
    return struct.pack(e + "IIII", sec, frac, incl, orig) + data

def w(name, b):
    open(os.path.join(out, name), "wb").write(b)

f64, f1518 = eth_udp(60), eth_udp(1514)
for magic, mname, frac in ((MICROS, "micros", 123456), (NANOS, "nanos", 123456789)):
    for e, ename in (("<", "le"), (">", "be")):
        w(f"{ename}-{mname}", header(magic, e) + rec(1700000000, frac, f64, e)
          + rec(1700000001, 0, f1518, e))
w("header-only", header(NANOS))
w("snaplen-cut", header(NANOS, snaplen=64) + rec(1, 2, f1518[:64], orig=1514))
w("vlan-linktype-other", header(MICROS, linktype=113) + rec(0, 0, f64))
w("empty-record", header(MICROS) + rec(0, 0, b""))
w("frac-over-a-second", header(NANOS) + rec(0xFFFFFFFF, 0xFFFFFFFF, f64)
  + rec(5, 999999999, f64))
w("short-header", header(NANOS)[:10])
w("bad-magic", b"\x0a\x0d\x0d\x0a" + header(NANOS)[4:])
w("bad-version", header(NANOS, major=1))
w("truncated-record-header", header(NANOS) + rec(0, 0, f64)[:9])
w("truncated-record-data", header(NANOS) + rec(0, 0, f64)[:40])
w("incl-over-orig", header(NANOS) + rec(0, 0, f64, orig=10))
w("incl-over-max", header(NANOS) + rec(0, 0, b"", incl=(1 << 20) + 1, orig=(1 << 20) + 1))
