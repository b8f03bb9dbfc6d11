//! The bodies of the ports fuzz targets, one plain function per target: `fuzz_targets/<t>.rs`
//! calls it under libFuzzer (nightly), and `crates/ports/tests/fuzz_corpus.rs` replays the
//! checked-in corpus through it on stable (this file is included there by path).

use vecswitch_ports::pcap::{PcapReader, PcapWriter};

/// A target: the name of its file under `fuzz_targets/` and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target of this crate.
pub const TARGETS: &[Target] = &[
    ("memif_control", memif_control),
    ("memif_ring", memif_ring),
    ("pcap_reader", pcap_reader),
    ("af_packet_rx", af_packet_rx),
];

/// The memif control-message parser (records arrive from another process over the control
/// socket): never panic; a record that parses re-emits to a record that parses the same way.
pub fn memif_control(data: &[u8]) {
    vecswitch_ports::memif::fuzzing::control_msg(data);
}

/// memif ring handling: the input is written into a shared ring (header, descriptors, buffers) as
/// a hostile peer could, then receive and transmit run over it as server or client. Descriptors
/// outside the region must be dropped and counted, never followed; received packets must be
/// whole; every Pool buffer must come back.
pub fn memif_ring(data: &[u8]) {
    vecswitch_ports::memif::fuzzing::fuzz_rings(data);
}

/// Most records one input may yield (a 24-byte header then 16-byte empty records).
const MAX_RECORDS: usize = 4096;

/// The pcap reader (`vecswitch gen --pcap`, `reload` of captures, tests) on any file: never panic,
/// never allocate past the reader's record bound, errors name what is wrong; records never hold
/// more bytes than they claim were on the wire; what was read writes back (PcapWriter) and reads
/// again to the same timestamps and bytes.
pub fn pcap_reader(data: &[u8]) {
    let Ok(mut r) = PcapReader::new(data) else {
        return;
    };
    let _ = (r.linktype(), r.snaplen(), r.is_nanosecond());
    let mut records = Vec::new();
    while records.len() < MAX_RECORDS {
        match r.next_record() {
            Ok(Some(rec)) => {
                assert!(
                    rec.data.len() as u64 <= u64::from(rec.orig_len),
                    "record holds {} bytes of a {}-byte frame",
                    rec.data.len(),
                    rec.orig_len
                );
                assert!(rec.data.len() <= data.len(), "record longer than the file");
                records.push(rec);
            }
            Ok(None) => break,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                break;
            }
        }
    }
    let mut w = PcapWriter::new(Vec::new(), u32::MAX).expect("in-memory writer");
    for rec in &records {
        w.write_frame(rec.ts_ns, &rec.data)
            .expect("in-memory write");
    }
    assert_eq!(w.frames_written(), records.len() as u64);
    let bytes = w.into_inner().expect("in-memory flush");
    let again = PcapReader::new(&bytes[..])
        .expect("written header reads")
        .read_all()
        .expect("written records read");
    assert_eq!(again.len(), records.len());
    for (a, b) in again.iter().zip(&records) {
        assert_eq!(a.data, b.data);
        assert_eq!(a.orig_len as usize, b.data.len());
        // A pcap record holds seconds in 32 bits: timestamps past 2106 cannot round-trip.
        if b.ts_ns / 1_000_000_000 <= u64::from(u32::MAX) {
            assert_eq!(a.ts_ns, b.ts_ns);
        }
    }
}

/// The AF_PACKET receive walk (TPACKET_V3 blocks and TPACKET_V2 slots) over a ring image the input
/// writes: descriptors checked before use, every frame counted, every buffer back (see
/// `vecswitch_ports::af_packet::fuzzing::rx_walk`).
pub fn af_packet_rx(data: &[u8]) {
    let _ = vecswitch_ports::af_packet::fuzzing::rx_walk(data);
}
