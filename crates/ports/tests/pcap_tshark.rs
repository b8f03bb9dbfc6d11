//! The pcap files [`Capture`] writes are read by tshark (Wireshark) exactly as written. Without
//! tshark the tests fail, saying to install it (`make setup` does); they never skip.

use std::path::PathBuf;

use vecswitch_buffer::Pool;
use vecswitch_ports::loopback::{packet_from_bytes, pair};
use vecswitch_ports::pcap::{Capture, PcapReader};
use vecswitch_ports::Port;

struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("vecswitch-{tag}-{}.pcap", std::process::id())))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn frame(ethertype: u16, len: usize, tag: u8) -> Vec<u8> {
    let mut f = vec![tag; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&ethertype.to_be_bytes());
    f
}

/// (frame.len, eth.type) per frame, as tshark reads the file.
fn tshark_fields(path: &std::path::Path) -> Vec<(usize, u16)> {
    vecswitch_testsupport::tshark::fields(path, &[], &["frame.len", "eth.type"])
        .into_iter()
        .map(|row| {
            let [len, ty] = &row[..] else {
                panic!("unexpected tshark row {row:?}")
            };
            // A tagged frame lists every EtherType on the stack; the first is the outer one.
            let ty = ty.split(',').next().unwrap().trim_start_matches("0x");
            (len.parse().unwrap(), u16::from_str_radix(ty, 16).unwrap())
        })
        .collect()
}

#[test]
fn pcap_capture_of_rx_and_tx_is_read_by_tshark() {
    let file = TempFile::new("capture");
    let (a, mut b) = pair("a", "b");
    let mut cap = Capture::create(a, &file.0).unwrap();
    let mut pool = Pool::new(256);
    let sent = [
        frame(0x0800, 60, 1),
        frame(0x86dd, 1514, 2),
        frame(0x88b5, 9000, 3),
        frame(0x0806, 42, 4),
    ];
    let pkts: Vec<u32> = sent
        .iter()
        .map(|f| packet_from_bytes(&mut pool, f).unwrap())
        .collect();
    assert_eq!(cap.tx_burst(&mut pool, &pkts), 4);
    pool.free_bulk(&pkts);
    // The far end answers with two frames; the capture sees them on rx.
    let answers = [frame(0x8100, 64, 5), frame(0x0800, 128, 6)];
    let pkts: Vec<u32> = answers
        .iter()
        .map(|f| packet_from_bytes(&mut pool, f).unwrap())
        .collect();
    assert_eq!(b.tx_burst(&mut pool, &pkts), 2);
    pool.free_bulk(&pkts);
    let mut got = Vec::new();
    assert_eq!(cap.rx_burst(&mut pool, &mut got, 256), 2);
    pool.free_bulk(&got);
    assert_eq!(cap.captured(), 6);
    drop(cap); // flushes

    let expected: Vec<(usize, u16)> = sent
        .iter()
        .chain(answers.iter())
        .map(|f| (f.len(), u16::from_be_bytes([f[12], f[13]])))
        .collect();
    assert_eq!(tshark_fields(&file.0), expected);

    // Our own reader agrees, byte for byte.
    let recs = PcapReader::open(&file.0).unwrap().read_all().unwrap();
    let all: Vec<&Vec<u8>> = sent.iter().chain(answers.iter()).collect();
    assert_eq!(recs.len(), all.len());
    for (r, f) in recs.iter().zip(all) {
        assert_eq!(&r.data, f);
        assert_eq!(r.orig_len as usize, f.len());
    }
    assert!(recs.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns));
}

#[test]
fn pcap_capture_stops_at_max_frames_but_forwarding_continues() {
    let file = TempFile::new("maxframes");
    let (a, mut b) = pair("a", "b");
    let mut cap = Capture::create(a, &file.0).unwrap().with_max_frames(5);
    let mut pool = Pool::new(512);
    for burst in [3usize, 4, 5] {
        let pkts: Vec<u32> = (0..burst)
            .map(|i| packet_from_bytes(&mut pool, &frame(0x88b5, 60 + i, i as u8)).unwrap())
            .collect();
        assert_eq!(cap.tx_burst(&mut pool, &pkts), burst);
        pool.free_bulk(&pkts);
    }
    assert_eq!(cap.captured(), 5);
    assert!(!cap.is_capturing());
    assert_eq!(cap.stats().tx_packets, 12);
    let mut got = Vec::new();
    assert_eq!(b.rx_burst(&mut pool, &mut got, 256), 12);
    pool.free_bulk(&got);
    // The limit flushed the file: tshark sees the 5 frames while the capture is still open.
    let seen = tshark_fields(&file.0);
    assert_eq!(
        seen,
        vec![
            (60, 0x88b5),
            (61, 0x88b5),
            (62, 0x88b5),
            (60, 0x88b5),
            (61, 0x88b5)
        ]
    );
    drop(cap);
}

#[test]
fn pcap_capture_to_unwritable_path_names_it() {
    let (a, _b) = pair("a", "b");
    let err = Capture::create(a, "/nonexistent-dir/x.pcap").unwrap_err();
    assert!(err.to_string().contains("/nonexistent-dir/x.pcap"), "{err}");
}

#[test]
fn pcap_finish_flushes_and_stops_capturing() {
    let file = TempFile::new("finish");
    let (a, mut b) = pair("a", "b");
    let mut cap = Capture::create(a, &file.0).unwrap();
    let mut pool = Pool::new(64);
    let h = packet_from_bytes(&mut pool, &frame(0x0800, 60, 1)).unwrap();
    assert_eq!(cap.tx_burst(&mut pool, &[h]), 1);
    cap.finish().unwrap();
    assert!(!cap.is_capturing());
    assert_eq!(cap.tx_burst(&mut pool, &[h]), 1);
    pool.free(h);
    assert_eq!(cap.captured(), 1);
    assert_eq!(tshark_fields(&file.0), vec![(60, 0x0800)]);
    let mut got = Vec::new();
    assert_eq!(b.rx_burst(&mut pool, &mut got, 8), 2);
    pool.free_bulk(&got);
}
