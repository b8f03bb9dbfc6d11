//! The LAG tests' own traffic (bond_veth.rs): numbered frames of EtherType 0x88b5
//! (IEEE "local experimental") carrying a per-test magic, sent and received by an AF_PACKET socket
//! of the test's own in a namespace ([`Probe`]).
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use vecswitch_buffer::Pool;
use vecswitch_ports::af_packet::{AfPacketConfig, AfPacketPort};
use vecswitch_ports::loopback::packet_from_bytes;
use vecswitch_ports::Port;

pub const ETHERTYPE: u16 = 0x88b5;

/// A frame with sequence number `seq` and `magic`, from a source MAC among 64 (so a layer2 hash
/// spreads them over both members).
pub fn frame(seq: u32, magic: u32) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[0..6].copy_from_slice(&[0x02, 0xaa, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0xbb, 0, 0, 0, (seq % 64) as u8]);
    f[12..14].copy_from_slice(&ETHERTYPE.to_be_bytes());
    f[14..18].copy_from_slice(&magic.to_be_bytes());
    f[18..22].copy_from_slice(&seq.to_be_bytes());
    f
}

/// The test's own AF_PACKET socket in a namespace, with a pool; it sends and counts only frames
/// carrying its `magic`.
pub struct Probe {
    port: AfPacketPort,
    pool: Pool,
    magic: u32,
}

impl Probe {
    /// Opens `ifname` in namespace `ns` (its name).
    pub fn open(ns: &str, ifname: &str, magic: u32) -> Probe {
        let port = AfPacketPort::open_in_netns(
            AfPacketConfig::new(&format!("probe-{ifname}"), ifname),
            &format!("/run/netns/{ns}"),
        )
        .unwrap_or_else(|e| panic!("AF_PACKET on {ifname} in {ns}: {e}"));
        Probe {
            port,
            pool: Pool::new(1024),
            magic,
        }
    }

    pub fn send(&mut self, seqs: impl IntoIterator<Item = u32>) {
        for s in seqs {
            let h = packet_from_bytes(&mut self.pool, &frame(s, self.magic)).unwrap();
            for _ in 0..100 {
                if self.port.tx_burst(&mut self.pool, &[h]) == 1 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            self.pool.free(h);
        }
        self.port.poll_control();
    }

    /// Receives what is waiting; adds the sequence numbers of our frames to `got`.
    pub fn recv(&mut self, got: &mut BTreeSet<u32>) {
        let mut hs = Vec::new();
        let mut v = Vec::new();
        while self.port.rx_burst(&mut self.pool, &mut hs, 256) > 0 {
            for &h in &hs {
                self.pool.copy_out(h, &mut v);
                if v.len() >= 22
                    && v[12..14] == ETHERTYPE.to_be_bytes()
                    && v[14..18] == self.magic.to_be_bytes()
                {
                    got.insert(u32::from_be_bytes([v[18], v[19], v[20], v[21]]));
                }
            }
            self.pool.free_bulk(&hs);
            hs.clear();
        }
    }

    /// Receives until `want` frames arrived or `timeout` passed.
    pub fn recv_until(&mut self, got: &mut BTreeSet<u32>, want: usize, timeout: Duration) {
        let t0 = Instant::now();
        while got.len() < want && t0.elapsed() < timeout {
            self.recv(got);
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}
