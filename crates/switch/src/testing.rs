//! Setups shared by the benchmarks (`benches/l2.rs`), the instruction-count example
//! (`examples/l2_packets.rs`), the fuzz target (`fuzz/`) and property tests. Not used by the switch
//! itself.
//!
//! - [`xconnect_switch`]: two ports, `src` (a `loopback::Replay` source) cross-connected to `sink`.
//! - [`xconnect_mtu_switch`]: the same with the `mtu-check` output-arc feature enabled on `sink`
//!   (every frame fits): what one enabled feature on an arc costs.
//! - [`bridge_switch`]: a bridge of the same two ports whose MAC table is pre-populated with
//!   `entries` stations, half behind each port, and a source whose frames go between stations
//!   spread over the whole table (every frame a table hit for its source and its destination);
//!   [`bridge_switch_replaying`] the same bridge and table with frames of the caller's.
//! - [`fuzz_frames`]: runs arbitrary bytes, cut into frames, through ethernet-input, a bridge and an
//!   xconnect (with `mtu-check` on one bridge member, so that the output arc is active), and checks
//!   that every buffer comes back.
//! - [`interleave`]: the interleaved wall-clock comparison of the `*_packets interleave` examples.

use vecswitch_ports::loopback::{packet_from_bytes, Replay};

use crate::{BridgeSettings, Switch, SwitchConfig};

/// A locally administered unicast MAC for station `i`.
pub fn station(i: u32) -> [u8; 6] {
    let b = i.to_be_bytes();
    [0x02, 0x5e, b[0], b[1], b[2], b[3]]
}

/// A 64-byte frame (60 without FCS, RFC 2544 §9's smallest) from `src` to `dst`.
pub fn frame64(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f
}

fn replay(name: &str, templates: Vec<Vec<u8>>, limit: Option<u64>) -> Box<Replay> {
    // Templates are never empty here, so Replay::new cannot fail.
    let r = Replay::new(name, templates).expect("non-empty templates");
    Box::new(match limit {
        Some(n) => r.with_limit(n),
        None => r,
    })
}

fn base_switch(mac_entries: usize) -> Switch {
    Switch::new(SwitchConfig {
        buffers: 8192,
        mac_table_entries: mac_entries.max(1024),
        ..Default::default()
    })
}

/// Port `src` (a replay source of 64-byte frames, `limit` frames in all or endless) cross-connected
/// to port `sink` (a replay port that only counts what it is sent).
pub fn xconnect_switch(limit: Option<u64>) -> Switch {
    let mut sw = base_switch(1024);
    let t = vec![frame64(station(1), station(0))];
    sw.add_port("src", replay("src", t.clone(), limit))
        .expect("fresh switch");
    sw.add_port("sink", replay("sink", t, Some(0)))
        .expect("fresh switch");
    sw.add_xconnect("src", "sink").expect("ports exist");
    sw
}

/// [`xconnect_switch`] with `mtu-check` enabled on `sink`'s output arc; the default MTU (9000) lets
/// every 64-byte frame through.
pub fn xconnect_mtu_switch(limit: Option<u64>) -> Switch {
    let mut sw = xconnect_switch(limit);
    sw.set_mtu_check("sink", true).expect("port exists");
    sw
}

/// Templates the bridge source replays: at most this many distinct frames.
pub const BRIDGE_TEMPLATES: u32 = 16_384;

/// A bridge of `src` and `sink` with `entries` (≥ 2) learned stations: even stations behind `src`,
/// odd ones behind `sink`. `src` replays frames from even to odd stations spread evenly over the
/// table (`limit` frames in all, or endless), so each frame refreshes its source and hits its
/// destination. Aging is off so that the table stays as built.
pub fn bridge_switch(entries: u32, limit: Option<u64>) -> Switch {
    let entries = entries.max(2);
    let pairs = entries / 2;
    let n = pairs.min(BRIDGE_TEMPLATES);
    let stride = pairs / n;
    let templates: Vec<Vec<u8>> = (0..n)
        .map(|k| {
            // Source and destination from different parts of the table.
            let s = (k * stride) % pairs;
            let d = ((k * stride) + pairs / 2) % pairs;
            frame64(station(2 * d + 1), station(2 * s))
        })
        .collect();
    bridge_switch_replaying(entries, templates, limit)
}

/// [`bridge_switch`]'s bridge and table of `entries` (≥ 2) learned stations, with `src`
/// replaying `templates` (non-empty; `limit` frames in all, or endless) instead of the spread
/// ones: e.g. many copies of one frame, to tell the templates' memory from the table's.
pub fn bridge_switch_replaying(
    entries: u32,
    templates: Vec<Vec<u8>>,
    limit: Option<u64>,
) -> Switch {
    let entries = entries.max(2);
    let mut sw = base_switch(entries as usize + entries as usize / 8);
    sw.add_port("src", replay("src", templates, limit))
        .expect("fresh switch");
    sw.add_port(
        "sink",
        replay("sink", vec![frame64(station(0), station(1))], Some(0)),
    )
    .expect("fresh switch");
    let settings = BridgeSettings {
        mac_age_s: 0,
        mac_limit: u32::MAX,
        ..Default::default()
    };
    sw.add_bridge("br", settings).expect("fresh switch");
    sw.add_bridge_member("br", "src").expect("ports exist");
    sw.add_bridge_member("br", "sink").expect("ports exist");
    populate(&mut sw, entries);
    sw.clear_counters();
    sw
}

/// Learns stations 0..entries (even ones on port 0, odd on port 1) by injecting one frame from each
/// to a station that is already known on the same port, so nothing is flooded.
fn populate(sw: &mut Switch, entries: u32) {
    let mut batch = Vec::with_capacity(256);
    for first in (0..entries).step_by(256) {
        for port in 0..2u16 {
            batch.clear();
            for i in (first..(first + 256).min(entries)).filter(|i| i % 2 == port as u32) {
                let dst = if port == 0 { station(0) } else { station(1) };
                if let Some(h) = packet_from_bytes(sw.pool_mut(), &frame64(dst, station(i))) {
                    batch.push(h);
                }
            }
            sw.inject(port, &batch);
        }
    }
}

/// Runs `data` through a switch as frames: each frame is a length byte (0-255, +0..=2 more
/// length bytes for jumbo sizes picked by the top bits of the next byte) followed by that many
/// bytes, until `data` runs out. Frames enter on one of four ports (a bridge of three, one
/// cross-connected to a bridge member) chosen by the frame's first byte. Panics only if a buffer is
/// not returned to the pool (the property under test) — never on any input.
pub fn fuzz_frames(data: &[u8]) {
    let mut sw = Switch::new(SwitchConfig {
        buffers: 512,
        mac_table_entries: 64,
        ..Default::default()
    });
    for p in ["a", "b", "c", "x"] {
        sw.add_port(p, replay(p, vec![vec![0u8]], Some(0)))
            .expect("fresh switch");
    }
    let settings = BridgeSettings {
        mac_limit: 16,
        ..Default::default()
    };
    sw.add_bridge("br", settings).expect("fresh switch");
    for p in ["a", "b", "c"] {
        sw.add_bridge_member("br", p).expect("ports exist");
    }
    sw.add_xconnect("x", "a").expect("ports exist");
    // An output feature on one member: packets to `b` take the arc, others go straight out.
    sw.set_interface_mtu("b", 100).expect("port exists");
    sw.set_mtu_check("b", true).expect("port exists");
    sw.trace_add(8);
    let mut rest = data;
    let mut batch: Vec<(u16, u32)> = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let mut len = len as usize;
        let mut tail = tail;
        if let Some((&ext, t)) = tail.split_first() {
            // Top bit set: this byte adds 256 × its low 4 bits (frames up to ~4 KiB, chained).
            if ext & 0x80 != 0 {
                len += 256 * (ext & 0x0f) as usize;
                tail = t;
            }
        }
        let n = len.min(tail.len());
        let bytes = &tail[..n];
        rest = &tail[n..];
        let port = bytes.first().map_or(0, |b| (b % 4) as u16);
        if let Some(h) = packet_from_bytes(sw.pool_mut(), bytes) {
            batch.push((port, h));
        }
        if batch.len() == 64 {
            flush(&mut sw, &mut batch);
        }
    }
    flush(&mut sw, &mut batch);
    sw.age_all();
    let _ = (
        sw.show_errors(),
        sw.show_trace(),
        sw.show_mac(None),
        sw.show_runtime(),
    );
    assert_eq!(sw.pool().in_use(), 0, "every buffer returns to the pool");
    assert_eq!(sw.pool().stats().double_frees, 0, "no buffer freed twice");
}

fn flush(sw: &mut Switch, batch: &mut Vec<(u16, u32)>) {
    for port in 0..4u16 {
        let hs: Vec<u32> = batch
            .iter()
            .filter(|(p, _)| *p == port)
            .map(|&(_, h)| h)
            .collect();
        if !hs.is_empty() {
            sw.inject(port, &hs);
        }
    }
    batch.clear();
}

/// ns per packet of `vectors` full vectors through `sw` (a source that fills every vector).
fn sample(sw: &mut Switch, vectors: u32) -> Option<f64> {
    let t0 = std::time::Instant::now();
    for _ in 0..vectors {
        if sw.poll_once() != 256 {
            return None;
        }
    }
    Some(t0.elapsed().as_nanos() as f64 / (vectors as f64 * 256.0))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The interleaved wall-clock comparison of the `*_packets interleave` examples: every switch of
/// `cases` (built beforehand, each with an endless source) is warmed, then each of `rounds`
/// rounds times one sample (64 vectors of 256 packets) of every case in turn, so that a loaded
/// host slows all cases alike. Prints a Markdown table — per case the minimum and median
/// ns/packet and the rate relative to case `base` (median of the per-round ratios) — and returns
/// an error naming the case if a source did not fill a vector or a case counted an error (every
/// frame must take the measured path).
pub fn interleave(
    cases: &mut [(String, Switch)],
    rounds: usize,
    base: usize,
) -> Result<(), String> {
    for (name, sw) in cases.iter_mut() {
        // Warm-up: caches, TLB, branch predictors.
        sample(sw, 64).ok_or_else(|| format!("{name}: the source did not fill a vector"))?;
    }
    let mut ns = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for ((name, sw), v) in cases.iter_mut().zip(&mut ns) {
            v.push(
                sample(sw, 64)
                    .ok_or_else(|| format!("{name}: the source did not fill a vector"))?,
            );
        }
    }
    let base_name = &cases[base].0;
    println!(
        "| case | min ns/pkt | median ns/pkt | rate × {base_name} (median of per-round ratios) |"
    );
    println!("|---|---|---|---|");
    for (i, (name, sw)) in cases.iter().enumerate() {
        let ratio = median(ns[base].iter().zip(&ns[i]).map(|(b, c)| b / c).collect());
        let min = ns[i].iter().copied().fold(f64::INFINITY, f64::min);
        println!(
            "| {name} | {min:.2} | {:.2} | {ratio:.3} |",
            median(ns[i].clone())
        );
        let errors = sw.show_errors();
        if !errors.is_empty() {
            return Err(format!(
                "{name}: not every frame took the measured path: {errors:?}"
            ));
        }
    }
    Ok(())
}
