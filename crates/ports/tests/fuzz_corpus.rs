//! Replays the ports fuzz corpus (crates/ports/fuzz/seeds and regressions: memif control
//! records, memif rings, pcap files) through the fuzz targets' bodies on the stable toolchain: a
//! regression on any checked-in input fails `make test`.

#[path = "../../wire/fuzz/replay.rs"]
mod replay;
#[path = "../fuzz/src/lib.rs"]
mod targets;

use std::path::{Path, PathBuf};

use vecswitch_ports::pcap::PcapReader;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

#[test]
fn ports_fuzz_corpus_replays() {
    replay::replay(&fuzz_dir(), targets::TARGETS);
}

/// The pcap seeds are what their names say, so fuzzing starts from every branch of the reader.
#[test]
fn pcap_seeds_are_what_they_claim() {
    let read = |name: &str| {
        let p = fuzz_dir().join("seeds/pcap_reader").join(name);
        PcapReader::open(&p).and_then(|mut r| r.read_all())
    };
    for name in ["le-micros", "be-micros", "le-nanos", "be-nanos"] {
        let recs = read(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(recs.len(), 2, "{name}");
        assert_eq!(
            (recs[0].data.len(), recs[1].data.len()),
            (60, 1514),
            "{name}"
        );
        assert_eq!(
            recs[0].ts_ns,
            1_700_000_000_123_456_000 + u64::from(name.ends_with("nanos")) * 789
        );
    }
    assert_eq!(read("header-only").unwrap().len(), 0);
    assert_eq!(read("snaplen-cut").unwrap()[0].orig_len, 1514);
    for name in [
        "short-header",
        "bad-magic",
        "bad-version",
        "truncated-record-header",
        "truncated-record-data",
        "incl-over-orig",
        "incl-over-max",
    ] {
        assert!(read(name).is_err(), "{name} should be refused");
    }
}

/// The AF_PACKET ring images hold what their names say: the walk receives their frames.
#[test]
fn af_packet_seeds_are_what_they_claim() {
    let walk = |name: &str| {
        let p = fuzz_dir().join("seeds/af_packet_rx").join(name);
        vecswitch_ports::af_packet::fuzzing::rx_walk(&std::fs::read(&p).unwrap())
    };
    for (name, frames) in [
        ("v3-two-blocks", 4),
        ("v3-burst-of-one", 3),
        ("v3-vlan-tags", 2),
        ("v3-csum-not-ready", 1),
        ("v3-full-block", 2),
        ("v3-kernel-owned", 0),
        ("v2-four-slots", 4),
        ("v2-vlan", 2),
        ("v2-gap", 1),
    ] {
        assert_eq!(walk(name), frames, "{name}");
    }
}
