//! RFC 2889 §5.7 address caching capacity of vecswitch's bridge, in process: the lab's procedure
//! (`vecswitch_lab::procedures::rfc2889`) drives a real `Switch` (graph, `l2-learn`, `l2-fwd`,
//! `l2-flood`, the MAC table) over three loopback ports — learning, test, monitor — and must find
//! the bridge's `mac_limit`.
//!
//! The test port's own address is a static entry (static entries do not count against
//! `mac_limit`), so the capacity found is the limit itself. In process there is no wire and no
//! clock to pace the learning frames: they go in vectors of 256 as fast as the switch takes them,
//! so the learning *rate* (§5.8) is not measured here; the rate search needs the generator with
//! many source addresses (not wired yet: one flow per direction, `vecswitch bench`).

mod common;

use common::*;
use vecswitch_buffer::Pool;
use vecswitch_lab::procedures::rfc2889::{
    address_caching_capacity, AddressCounts, AddressDevice, CachingConfig,
};
use vecswitch_lab::LabError;
use vecswitch_ports::loopback::LoopbackPort;
use vecswitch_ports::Port;
use vecswitch_switch::l2::BridgeSettings;
use vecswitch_switch::{Switch, SwitchConfig};

/// The test port's station.
const TEST_STATION: u32 = 1;
/// Learned stations are numbered from here.
const FIRST: u32 = 1_000;

/// A fresh bridge `b` of ports learn, test, monitor with `mac_limit` for every trial (an empty
/// table, as §5.7.2 asks between trials).
struct VecswitchBridge {
    mac_limit: u32,
    trials: u32,
}

/// Sends `frames` into `from`, a vector at a time, and returns how many frames each peer received
/// (drained after every vector: a loopback queue holds 1,024).
fn push(
    sw: &mut Switch,
    peers: &mut [LoopbackPort],
    from: usize,
    pool: &mut Pool,
    frames: &[Vec<u8>],
) -> Vec<u64> {
    let mut got = vec![0u64; peers.len()];
    for chunk in frames.chunks(256) {
        let hs: Vec<u32> = chunk.iter().map(|f| packet(pool, f)).collect();
        assert_eq!(
            peers[from].tx_burst(pool, &hs),
            hs.len(),
            "loopback queue has room"
        );
        pool.free_bulk(&hs);
        while sw.poll_once() > 0 {}
        for (g, p) in got.iter_mut().zip(peers.iter_mut()) {
            *g += drain(p, pool).len() as u64;
        }
    }
    got
}

impl AddressDevice for VecswitchBridge {
    fn trial(&mut self, addresses: u32, _learn_rate_fps: f64) -> Result<AddressCounts, LabError> {
        self.trials += 1;
        let mut sw = Switch::new(SwitchConfig {
            buffers: 8192,
            mac_table_entries: 1 << 16,
            ..Default::default()
        });
        let mut peers = Vec::new();
        for name in ["learn", "test", "monitor"] {
            let (port, peer) = wire(name);
            sw.add_port(name, port)
                .map_err(|e| LabError::Dut(e.to_string()))?;
            peers.push(peer);
        }
        let settings = BridgeSettings {
            mac_limit: self.mac_limit,
            ..Default::default()
        };
        let dut = |e: vecswitch_switch::SwitchError| LabError::Dut(e.to_string());
        sw.add_bridge("b", settings).map_err(dut)?;
        for p in ["learn", "test", "monitor"] {
            sw.add_bridge_member("b", p).map_err(dut)?;
        }
        sw.add_static_mac("b", mac(TEST_STATION), "test")
            .map_err(dut)?;
        let mut pool = Pool::new(8192);
        // Learning frames: N sources on the learning port, to the test port's station.
        let learning: Vec<Vec<u8>> = (0..addresses)
            .map(|i| frame(mac(TEST_STATION), mac(FIRST + i), 64))
            .collect();
        push(&mut sw, &mut peers, 0, &mut pool, &learning);
        // Test frames: one to each learned address, from the test port.
        let test: Vec<Vec<u8>> = (0..addresses)
            .map(|i| frame(mac(FIRST + i), mac(TEST_STATION), 64))
            .collect();
        let got = push(&mut sw, &mut peers, 1, &mut pool, &test);
        let (test_received, flooded) = (got[0], got[2]);
        Ok(AddressCounts {
            learning_sent: addresses as u64,
            test_sent: addresses as u64,
            test_received,
            flooded,
        })
    }
}

#[test]
fn the_caching_capacity_found_is_the_bridges_mac_limit() {
    // The seed-001 scale points (1,200 and 2,600 MACs) and an odd one.
    for limit in [1_200, 2_600, 777] {
        let mut dev = VecswitchBridge {
            mac_limit: limit,
            trials: 0,
        };
        let cfg = CachingConfig {
            min_addresses: 1,
            max_addresses: 8_192,
            resolution: 1,
            learn_rate_fps: 1_000.0,
        };
        let r = address_caching_capacity(&mut dev, &cfg).unwrap();
        assert_eq!(
            r.value,
            Some(limit as f64),
            "mac_limit {limit}: {:#?}",
            r.trials
        );
        // A failing trial floods exactly the addresses beyond the limit (to the monitor port, and
        // to the learning port too, where the frames then count as received).
        for t in r.trials.iter().filter(|t| !t.passed) {
            assert_eq!(t.counts.flooded, (t.addresses - limit) as u64, "{t:?}");
            assert_eq!(t.counts.test_received, t.addresses as u64, "{t:?}");
        }
        assert_eq!(dev.trials as usize, r.trials.len());
    }
}
